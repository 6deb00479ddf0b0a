//! How a protocol stream was created: its [`Config`], compared by an idempotent `PUT` and
//! kept by a journal, and the time a `Stream-Expires-At` names.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::store::Address;

/// How a stream was created: compared by an idempotent `PUT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Config {
    /// The media type, lower case, without parameters.
    pub(crate) content_type: String,
    /// `Stream-TTL`, in seconds.
    pub(crate) ttl: Option<u64>,
    /// `Stream-Expires-At` as given, and when that is.
    pub(crate) expires_at: Option<(String, SystemTime)>,
    /// The stream this one is a fork of, the offset and the sub-offset it forked at.
    pub(crate) fork_of: Option<(Address, u64, u64)>,
}

/// Parses `Stream-Expires-At`, an RFC 3339 timestamp (`2026-11-30T17:00:00Z`, fractions and
/// offsets allowed, `t` and `z` in either case): `Err` says which part is wrong (the month,
/// the day of that month, the offset's hour, ...). The `time` crate checks every field's
/// range; it takes any character between date and time, and this takes `T`, `t` or a space
/// (RFC 3339's note allows a space for readability), nothing else.
pub(crate) fn parse_rfc3339(v: &str) -> Result<SystemTime, String> {
    use time::format_description::well_known::Rfc3339;
    let at = time::OffsetDateTime::parse(v, &Rfc3339).map_err(|e| e.to_string())?;
    // Parsed, so `v` starts with the ten bytes of a date.
    if !matches!(v.as_bytes()[10], b'T' | b't' | b' ') {
        return Err("the date and the time are not separated by T".into());
    }
    // Checked, not `SystemTime::from` (which panics where the system's clock ends: before
    // 1601 on Windows).
    let secs = at.unix_timestamp();
    let whole = Duration::from_secs(secs.unsigned_abs());
    let whole = if secs < 0 {
        UNIX_EPOCH.checked_sub(whole)
    } else {
        UNIX_EPOCH.checked_add(whole)
    };
    whole
        .and_then(|t| t.checked_add(Duration::from_nanos(at.nanosecond().into())))
        .ok_or_else(|| "beyond what this system's clock represents".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        // Each instant as Unix seconds and nanoseconds, worked out apart from the parser
        // (2026-11-30 is day 333 of 2026, which starts at 1,767,225,600; 2000-03-01 starts
        // at 951,868,800), and checked against `date -u -d`.
        let at = |secs: u64, nanos: u32| UNIX_EPOCH + Duration::new(secs, nanos);
        let valid = [
            ("1970-01-02T00:00:00Z", at(86_400, 0)),
            (
                "2026-11-30T17:00:00Z",
                at(1_767_225_600 + 333 * 86_400 + 17 * 3600, 0),
            ),
            ("2026-11-30t17:00:00z", at(1_796_058_000, 0)),
            ("2026-11-30 17:00:00Z", at(1_796_058_000, 0)),
            ("1970-01-02T01:00:00.5+01:00", at(86_400, 500_000_000)),
            // A leap day, a fraction and a half-hour offset west: 2000-03-01T05:29:59.25Z.
            (
                "2000-02-29T23:59:59.25-05:30",
                at(951_868_800 + 5 * 3600 + 29 * 60 + 59, 250_000_000),
            ),
            ("1969-12-31T23:00:00-01:00", at(0, 0)),
            ("2026-11-30T17:00:00.000000001Z", at(1_796_058_000, 1)),
        ];
        for (v, instant) in valid {
            assert_eq!(parse_rfc3339(v), Ok(instant), "{v}");
        }
        assert_eq!(
            parse_rfc3339("1969-12-31T23:59:59.5Z"),
            Ok(UNIX_EPOCH - Duration::from_millis(500)),
            "before the epoch"
        );
        // Each refused, the reason naming the part that is wrong.
        let invalid = [
            ("2026-02-31T00:00:00Z", "day"),
            ("2026-13-01T00:00:00Z", "month"),
            ("2026-01-01T24:00:00Z", "hour"),
            ("2026-01-01T00:60:00Z", "minute"),
            ("2026-01-01T00:00:00+99:99", "offset"),
            ("2026-01-01T00:00:00+01:99", "offset"),
            ("2026-01-01T00:00:00", "offset"),
            ("2026-01-01X00:00:00Z", "separated"),
            ("2026-01-01T00:00:00Zjunk", "trailing"),
            ("99999-01-01T00:00:00Z", "not valid"),
            ("not a date", "year"),
        ];
        for (v, part) in invalid {
            let why = parse_rfc3339(v).expect_err(v);
            assert!(why.contains(part), "{v}: {why}");
        }
    }
}
