//! serde's `rename_all` rules, applied to field names exactly as serde applies them.

/// A `rename_all` rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RenameRule {
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

pub(crate) const RULES: &[(&str, RenameRule)] = &[
    ("lowercase", RenameRule::Lower),
    ("UPPERCASE", RenameRule::Upper),
    ("PascalCase", RenameRule::Pascal),
    ("camelCase", RenameRule::Camel),
    ("snake_case", RenameRule::Snake),
    ("SCREAMING_SNAKE_CASE", RenameRule::ScreamingSnake),
    ("kebab-case", RenameRule::Kebab),
    ("SCREAMING-KEBAB-CASE", RenameRule::ScreamingKebab),
];

impl RenameRule {
    pub(crate) fn from_str(s: &str) -> Option<RenameRule> {
        RULES.iter().find(|(name, _)| *name == s).map(|(_, r)| *r)
    }

    /// Applies the rule to a PascalCase variant name, as serde does.
    pub(crate) fn apply_to_variant(self, variant: &str) -> String {
        let snake = || {
            let mut snake = String::new();
            for (i, ch) in variant.char_indices() {
                if i > 0 && ch.is_uppercase() {
                    snake.push('_');
                }
                snake.push(ch.to_ascii_lowercase());
            }
            snake
        };
        match self {
            RenameRule::Pascal => variant.to_owned(),
            RenameRule::Lower => variant.to_ascii_lowercase(),
            RenameRule::Upper => variant.to_ascii_uppercase(),
            RenameRule::Camel => {
                let mut chars = variant.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => String::new(),
                }
            }
            RenameRule::Snake => snake(),
            RenameRule::ScreamingSnake => snake().to_ascii_uppercase(),
            RenameRule::Kebab => snake().replace('_', "-"),
            RenameRule::ScreamingKebab => snake().to_ascii_uppercase().replace('_', "-"),
        }
    }

    /// Applies the rule to a snake_case field name, as serde does.
    pub(crate) fn apply_to_field(self, field: &str) -> String {
        match self {
            RenameRule::Lower | RenameRule::Snake => field.to_owned(),
            RenameRule::Upper | RenameRule::ScreamingSnake => field.to_ascii_uppercase(),
            RenameRule::Pascal => {
                let mut pascal = String::new();
                let mut capitalize = true;
                for ch in field.chars() {
                    if ch == '_' {
                        capitalize = true;
                    } else if capitalize {
                        pascal.push(ch.to_ascii_uppercase());
                        capitalize = false;
                    } else {
                        pascal.push(ch);
                    }
                }
                pascal
            }
            RenameRule::Camel => {
                let pascal = RenameRule::Pascal.apply_to_field(field);
                let mut chars = pascal.chars();
                match chars.next() {
                    Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
                    None => pascal,
                }
            }
            RenameRule::Kebab => field.replace('_', "-"),
            RenameRule::ScreamingKebab => field.to_ascii_uppercase().replace('_', "-"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RenameRule::*;

    #[test]
    fn matches_serde() {
        let cases = [
            (
                "outcome", "outcome", "OUTCOME", "Outcome", "outcome", "OUTCOME",
            ),
            (
                "very_tasty",
                "veryTasty",
                "VERY_TASTY",
                "VeryTasty",
                "very-tasty",
                "VERY-TASTY",
            ),
            ("a", "a", "A", "A", "a", "A"),
            ("z42", "z42", "Z42", "Z42", "z42", "Z42"),
        ];
        for (field, camel, screaming, pascal, kebab, screaming_kebab) in cases {
            assert_eq!(Camel.apply_to_field(field), camel);
            assert_eq!(ScreamingSnake.apply_to_field(field), screaming);
            assert_eq!(Upper.apply_to_field(field), screaming);
            assert_eq!(Pascal.apply_to_field(field), pascal);
            assert_eq!(Kebab.apply_to_field(field), kebab);
            assert_eq!(ScreamingKebab.apply_to_field(field), screaming_kebab);
            assert_eq!(Snake.apply_to_field(field), field);
            assert_eq!(Lower.apply_to_field(field), field);
        }
    }
}
