//! Where a JSON value ends, without parsing it: how the readers step over one event they
//! cannot use and go on with the next.
//!
//! A trace is an array of events. When one of them is not a valid trace event (a field
//! of the wrong type, a stray byte), the reader must skip exactly that event, not the
//! rest of its line: a merged file written on a single line holds every event on that
//! line. [`value_end`] finds the end of the object or array that opens a buffer by
//! counting brackets outside strings, which holds for any event whose brackets and
//! quotes are balanced, whatever is wrong inside it.

/// The number of bytes of the object or array that starts `text` (at its first byte, `{`
/// or `[`), up to and including its closing bracket; `None` when `text` does not start
/// with one, or ends before it closes, or closes it with the other kind of bracket.
pub(crate) fn value_end(text: &[u8]) -> Option<usize> {
    let mut open: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in text.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' if !open.is_empty() => in_string = true,
            b'{' => open.push(b'}'),
            b'[' => open.push(b']'),
            b'}' | b']' => {
                if open.pop() != Some(b) {
                    return None;
                }
                if open.is_empty() {
                    return Some(i + 1);
                }
            }
            _ if open.is_empty() => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::value_end;

    #[test]
    fn ends_of_objects_with_anything_inside() {
        assert_eq!(value_end(b"{}"), Some(2));
        assert_eq!(value_end(b"{\"a\":[1,{\"b\":2}]},{\"c\":3}"), Some(17));
        // Brackets and escaped quotes inside strings do not count.
        assert_eq!(value_end(br#"{"a":"}]\"{"},{}"#), Some(13));
        // Invalid inside, balanced outside: still stepped over.
        assert_eq!(value_end(b"{\"ts\":soon,\"x\":}]"), Some(16));
    }

    #[test]
    fn no_end_when_unbalanced_or_not_a_value() {
        assert_eq!(value_end(b"{\"a\":1"), None);
        assert_eq!(value_end(b"{\"a\":[1}"), None);
        assert_eq!(value_end(b"x{}"), None);
        assert_eq!(value_end(b""), None);
    }
}
