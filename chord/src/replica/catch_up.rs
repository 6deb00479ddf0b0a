//! A catch-up answer's body, one JSON array of wire batches, split into its batches as its
//! bytes arrive: each batch is applied as soon as it is whole, so a replica holds one batch
//! of the answer at a time, never the whole answer.
//!
//! The split finds where each element of the array ends (brackets and braces outside
//! strings); what an element holds is the decoder's to check.

use super::Break;

/// Where the splitter is in the array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Before the array's `[`.
    Before,
    /// Between elements.
    Between,
    /// Inside an element.
    Inside,
    /// After the array's `]`.
    After,
}

/// Splits one JSON array into its elements, each at most `max` bytes.
#[derive(Debug)]
pub(super) struct Batches {
    place: Place,
    /// The element read so far.
    element: Vec<u8>,
    /// Open brackets and braces in the element.
    depth: usize,
    in_string: bool,
    escaped: bool,
    max: usize,
}

impl Batches {
    pub(super) fn new(max: usize) -> Batches {
        Batches {
            place: Place::Before,
            element: Vec::new(),
            depth: 0,
            in_string: false,
            escaped: false,
            max,
        }
    }

    /// Reads `bytes`, handing each element completed in them to `each`, in order. An error
    /// (the body is not an array of arrays, an element is over the bound or not UTF-8, or
    /// `each` failed) ends the split.
    pub(super) fn push(
        &mut self,
        bytes: &[u8],
        mut each: impl FnMut(&str) -> Result<(), Break>,
    ) -> Result<(), Break> {
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            match self.place {
                Place::Before => match b {
                    b'[' => self.place = Place::Between,
                    b' ' | b'\t' | b'\n' | b'\r' => {}
                    _ => return Err(bad("the catch-up answer is not a JSON array")),
                },
                Place::Between => match b {
                    b' ' | b'\t' | b'\n' | b'\r' | b',' => {}
                    b']' => self.place = Place::After,
                    b'[' => {
                        self.place = Place::Inside;
                        self.depth = 1;
                        start = i;
                    }
                    _ => return Err(bad("an element of the catch-up answer is not a batch")),
                },
                Place::Inside => {
                    if self.in_string {
                        if self.escaped {
                            self.escaped = false;
                        } else if b == b'\\' {
                            self.escaped = true;
                        } else if b == b'"' {
                            self.in_string = false;
                        }
                        continue;
                    }
                    match b {
                        b'"' => self.in_string = true,
                        b'[' | b'{' => self.depth += 1,
                        b']' | b'}' => {
                            self.depth -= 1;
                            if self.depth == 0 {
                                self.take(&bytes[start..=i])?;
                                let element = std::mem::take(&mut self.element);
                                let text = std::str::from_utf8(&element)
                                    .map_err(|_| bad("a catch-up batch is not UTF-8"))?;
                                each(text)?;
                                self.place = Place::Between;
                            }
                        }
                        _ => {}
                    }
                }
                Place::After => match b {
                    b' ' | b'\t' | b'\n' | b'\r' => {}
                    _ => return Err(bad("bytes after the catch-up answer's array")),
                },
            }
        }
        if self.place == Place::Inside {
            self.take(&bytes[start..])?;
        }
        Ok(())
    }

    /// Adds `bytes` to the element, within the bound.
    fn take(&mut self, bytes: &[u8]) -> Result<(), Break> {
        if self.element.len() + bytes.len() > self.max {
            return Err(Break::Events(format!(
                "a catch-up batch over {} bytes",
                self.max
            )));
        }
        self.element.extend_from_slice(bytes);
        Ok(())
    }

    /// Whether the whole array has been read.
    pub(super) fn finished(&self) -> bool {
        self.place == Place::After
    }
}

fn bad(what: &str) -> Break {
    Break::Decode(what.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The elements of `body` fed in chunks of `size` bytes.
    fn split(body: &str, size: usize, max: usize) -> Result<(Vec<String>, bool), Break> {
        let mut batches = Batches::new(max);
        let mut out = Vec::new();
        for chunk in body.as_bytes().chunks(size) {
            batches.push(chunk, |b| {
                out.push(b.to_owned());
                Ok(())
            })?;
        }
        Ok((out, batches.finished()))
    }

    #[test]
    fn an_array_splits_into_its_batches_however_its_bytes_arrive() {
        let body = r#" [[["r",{"a":"]}[\"\\"}],["a",["a"],"x"]] , [["s",["n"],1]] ]"#;
        let expected = vec![
            r#"[["r",{"a":"]}[\"\\"}],["a",["a"],"x"]]"#.to_owned(),
            r#"[["s",["n"],1]]"#.to_owned(),
        ];
        for size in 1..=body.len() {
            assert_eq!(
                split(body, size, 1 << 20).unwrap(),
                (expected.clone(), true),
                "{size}"
            );
        }
        assert_eq!(split("[]", 1, 10).unwrap(), (vec![], true));
        assert_eq!(split("[[1]", 1, 10).unwrap(), (vec!["[1]".into()], false));
    }

    #[test]
    fn what_is_not_an_array_of_batches_or_over_the_bound_is_refused() {
        for bad in ["{}", "[1]", "[\"x\"]", "[[1]] x", "x"] {
            assert!(matches!(split(bad, 1, 100), Err(Break::Decode(_))), "{bad}");
        }
        let long = format!(r#"[[["r","{}"]]]"#, "x".repeat(100));
        assert!(matches!(
            split(&long, 7, 50),
            Err(Break::Events(e)) if e.contains("over 50 bytes")
        ));
        assert!(split(&long, 7, 200).is_ok());
    }
}
