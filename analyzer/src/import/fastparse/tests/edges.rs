//! Inputs at the edges: other layouts, integers and times of every shape, string bodies,
//! digit runs, every op, and random mutations of valid lines. Each is either declined or
//! read exactly as serde reads it.

use super::*;

fn irecv_with(from: &str, to: &str) -> String {
    let line = EXAMPLES[1].replacen(from, to, 1);
    assert_ne!(line, EXAMPLES[1], "{from} not found");
    line
}

#[test]
fn other_layouts_are_declined() {
    let pack = EXAMPLES[0];
    let cases = [
        // Escapes, even harmless ones, and raw control characters.
        pack.replace("pack", r"pa\u0063k"),
        pack.replace("pack", r#"pa\"ck"#),
        pack.replace("pack", "pa\tck"),
        irecv_with("MPI_Irecv", r"MPI_\u0049recv"),
        irecv_with(r#""peer""#, r#""pe\u0065r""#),
        // Unknown names, phases, categories and keys.
        irecv_with("MPI_Irecv", "MPI_Frobnicate"),
        irecv_with("MPI_Irecv", "MPI_"),
        irecv_with("MPI_Irecv", "Irecv"),
        irecv_with(r#""ph":"X""#, r#""ph":"B""#),
        irecv_with(r#""cat":"mpi""#, r#""cat":"request""#),
        irecv_with(r#""cat":"mpi""#, r#""cat":"compute""#),
        pack.replace(r#""cat":"compute""#, r#""cat":"mpi""#),
        irecv_with(r#""peer""#, r#""peers""#),
        irecv_with(r#""request":1"#, r#""request":1,"id":3"#),
        irecv_with(r#""pid""#, r#""id":1,"pid""#),
        irecv_with(r#""peer":1"#, r#""peer":1,"peer":1"#),
        EXAMPLES[2].replace(r#""source":1"#, r#""source":1,"size":1"#),
        EXAMPLES[2].replace(r#""source":1"#, r#""source":1,"source":1"#),
        EXAMPLES[2].replace(r#""completed":["#, r#""completed":[],"completed":["#),
        EXAMPLES[2].replace(r#"}]}"#, r#"}],"completed":[]}"#),
        // Other key orders, whitespace, missing or extra pieces.
        irecv_with(r#""cat":"mpi","ph":"X""#, r#""ph":"X","cat":"mpi""#),
        irecv_with(r#""pid":0,"tid":0"#, r#""tid":0,"pid":0"#),
        irecv_with(r#","tid":0"#, ""),
        irecv_with(
            r#","args":{"peer":1,"tag":17,"bytes":131072,"comm":0,"buf":140566629883920,"buf_len":131072,"request":1}"#,
            "",
        ),
        irecv_with(r#""ts":"#, r#""ts": "#),
        irecv_with(r#""peer":1,"#, r#""peer":1 ,"#),
        format!(" {}", EXAMPLES[1]),
        irecv_with(r#""request":1}"#, r#""request":1,}"#),
        irecv_with(r#"{"peer""#, r#"{,"peer""#),
        pack.replace("{}", r#"{"a":1}"#),
        pack.replace("{}", "null"),
        irecv_with(r#""peer":1"#, r#""peer":null"#),
        EXAMPLES[2].replace("[{", "{").replace("}]", "}"),
        EXAMPLES[2].replace("}]", "},]"),
        // Times: exponents, too many decimals, signs, leading zeros, bare dots.
        irecv_with("27629.059", "2.7629059e4"),
        irecv_with("27629.059", "27629.059E0"),
        irecv_with("27629.059", "27629.0591"),
        irecv_with("27629.059", "27629.0590"),
        irecv_with("27629.059", "-27629.059"),
        irecv_with("27629.059", "-0"),
        irecv_with("27629.059", "+27629.059"),
        irecv_with("27629.059", "027629.059"),
        irecv_with("27629.059", "00"),
        irecv_with("27629.059", "27629."),
        irecv_with("27629.059", ".059"),
        irecv_with("27629.059", "1e21"),
        irecv_with("27629.059", "99999999999999999999999"),
        irecv_with("27629.059", "\"27629.059\""),
        // Integers: overflow, signs where none belong, -0, floats, leading zeros.
        irecv_with(r#""pid":0"#, r#""pid":4294967296"#),
        irecv_with(r#""tid":0"#, r#""tid":-1"#),
        irecv_with(r#""pid":0"#, r#""pid":0.0"#),
        irecv_with(r#""comm":0"#, r#""comm":4294967296"#),
        irecv_with(r#""bytes":131072"#, r#""bytes":18446744073709551616"#),
        irecv_with(r#""bytes":131072"#, r#""bytes":99999999999999999999"#),
        irecv_with(r#""bytes":131072"#, r#""bytes":-1"#),
        irecv_with(r#""bytes":131072"#, r#""bytes":131072.0"#),
        irecv_with(r#""bytes":131072"#, r#""bytes":1e3"#),
        irecv_with(r#""bytes":131072"#, r#""bytes":0131072"#),
        irecv_with(r#""peer":1"#, r#""peer":2147483648"#),
        irecv_with(r#""peer":1"#, r#""peer":-2147483649"#),
        irecv_with(r#""peer":1"#, r#""peer":-0"#),
        irecv_with(r#""peer":1"#, r#""peer":-"#),
        irecv_with(r#""peer":1"#, r#""peer":--1"#),
        irecv_with(r#""peer":1"#, r#""peer":"1""#),
        irecv_with(r#""peer":1"#, r#""peer":true"#),
        irecv_with(r#""request":1"#, r#""flag":256"#),
        EXAMPLES[2].replace(r#""source":1"#, r#""source":-0"#),
        EXAMPLES[2].replace(r#""request":1"#, r#""request":-1"#),
    ];
    for line in &cases {
        assert_declined(line.as_bytes());
        assert_sound(line.as_bytes());
    }
    // Names that are not UTF-8.
    let mut bytes = pack.as_bytes().to_vec();
    bytes[10] = 0xff;
    assert_declined(&bytes);
    assert!(via_serde(&bytes).is_err());
}

/// `read` applied to `text`, followed by `after`, and to `text` alone at the very end of
/// the buffer: the value read and what is left, in both cases.
fn read_both<T: PartialEq + std::fmt::Debug>(
    read: impl Fn(&mut &[u8]) -> Option<T>,
    text: &str,
    after: &str,
) -> Option<T> {
    let followed = format!("{text}{after}");
    let mut s = followed.as_bytes();
    let got = read(&mut s);
    if got.is_some() {
        assert_eq!(s, after.as_bytes(), "{followed}");
    }
    let mut s = text.as_bytes();
    let at_end = read(&mut s);
    assert_eq!(got, at_end, "{text} at the end of the buffer");
    if at_end.is_some() {
        assert!(s.is_empty(), "{text}");
    }
    got
}

#[test]
fn integers_of_every_length() {
    let mut rng = Rng(5);
    let mut texts: Vec<String> = Vec::new();
    for digits in 1..=22u32 {
        let mut random: String = (0..digits)
            .map(|_| char::from(b'0' + rng.below(10) as u8))
            .collect();
        if random.starts_with('0') && digits > 1 {
            random.replace_range(..1, "7");
        }
        texts.push(random);
        texts.push("9".repeat(digits as usize));
        texts.push(format!("1{}", "0".repeat(digits as usize - 1)));
    }
    texts.extend(
        [
            "0",
            "00",
            "01",
            "-0",
            "-",
            "",
            "-01",
            "+1",
            "18446744073709551615",
            "18446744073709551616",
            "2147483647",
            "2147483648",
            "-2147483648",
            "-2147483649",
            "4294967295",
            "4294967296",
            "255",
            "256",
        ]
        .map(String::from),
    );
    for text in &texts {
        // Rust's `parse` is laxer than JSON about signs and leading zeros.
        let digits = text.strip_prefix('-').unwrap_or(text);
        let leading_zero = digits.len() > 1 && digits.starts_with('0');
        let json_ok = !(text.starts_with('+') || leading_zero || text == "-0");
        for after in [",\"tag\":1}", "}", "]", ",", "}}\n"] {
            let expected = text.parse::<u64>().ok().filter(|_| json_ok);
            assert_eq!(read_both(unsigned, text, after), expected, "{text}");
            let expected = text.parse::<i32>().ok().filter(|_| json_ok);
            assert_eq!(read_both(signed, text, after), expected, "{text}");
        }
    }
}

#[test]
fn times_of_every_shape() {
    for whole in [
        "0",
        "5",
        "12",
        "999",
        "27629",
        "12345678",
        "123456789",
        "2251799813685",
    ] {
        for decimals in ["", ".0", ".5", ".05", ".005", ".25", ".125", ".999", ".000"] {
            let text = format!("{whole}{decimals}");
            let expected = whole.parse::<u64>().expect("digits") * 1000
                + format!("{:0<3}", decimals.trim_start_matches('.'))
                    .parse::<u64>()
                    .expect("digits");
            let line = format!("{text},\"pid\":0");
            let mut rest = line.as_bytes();
            let got = micros(&mut rest);
            if expected < MAX_EXACT_NS {
                assert_eq!(got, Some(expected), "{text}");
                assert_eq!(rest, b",\"pid\":0");
            } else {
                assert_eq!(got, None, "{text}");
            }
        }
    }
    for text in [
        "2251799813685.248",
        "2251799813686",
        "18446744073709551.999",
        "18446744073709551615",
        "99999999999999999999.5",
        "1.",
        "1.2345",
        "1.e3",
        "1e3",
        "-1",
        "01",
        ".5",
    ] {
        // Not read as a time, or not all of it (an exponent is left for the next
        // literal to trip over).
        let line = format!("{text},\"pid\":0");
        let mut s = line.as_bytes();
        let read = micros(&mut s);
        assert!(read.is_none() || s != b",\"pid\":0", "{text}: {read:?}");
    }
}

#[test]
fn string_bodies_of_every_length() {
    for len in 0..40 {
        let body = "x".repeat(len);
        for after in ["\",\"cat\"", "\""] {
            let text = format!("{body}{after}");
            let mut s = text.as_bytes();
            assert_eq!(string_body(&mut s), Some(body.as_bytes()), "{text}");
            assert_eq!(s, &after.as_bytes()[1..]);
        }
        let mut s = body.as_bytes();
        assert_eq!(string_body(&mut s), None, "unterminated {body}");
        for stop in ["\\", "\n", "\u{0}", "\u{1f}"] {
            for at in 0..=len {
                let mut text = body.clone();
                text.insert_str(at, stop);
                text.push('"');
                let mut s = text.as_bytes();
                assert_eq!(string_body(&mut s), None, "{text:?}");
            }
        }
    }
    let text = "ünï ✓\u{7f}\"";
    let mut s = text.as_bytes();
    assert_eq!(
        string_body(&mut s),
        Some(&text.as_bytes()[..text.len() - 1])
    );
}

#[test]
fn digit_runs() {
    for len in 0..=8 {
        for stop in [b'/', b':', b'.', b'e', b'"', 0x00, 0xfa, 0xff] {
            let mut bytes = *b"12345678";
            if let Some(b) = bytes.get_mut(len) {
                *b = stop;
            }
            let x = u64::from_le_bytes(bytes);
            assert_eq!(digit_run(x), len, "{bytes:?}");
            if len > 0 {
                let expected: u64 = std::str::from_utf8(&bytes[..len])
                    .expect("digits")
                    .parse()
                    .expect("digits");
                assert_eq!(digits_value(x, len), expected);
            }
        }
    }
}

#[test]
fn declined_where_serde_fails_too() {
    // Serde reads `-0` as a float, which no integer field accepts.
    let line = irecv_with(r#""peer":1"#, r#""peer":-0"#);
    assert!(via_serde(line.as_bytes()).is_err(), "{line}");
}

#[test]
fn every_op_is_read() {
    let tail = r#"","cat":"mpi","ph":"X","ts":5"#;
    for &op in Op::ALL {
        let text = format!("{}{tail}", op.mpi_name());
        let mut s = text.as_bytes();
        assert_eq!(call_head(&mut s), Some(op), "{text}");
        assert_eq!(s, b"5");
    }
    for name in [
        "MPI_Sendrecv_replacement",
        "MPI_Sen",
        "MPI_",
        "MPI",
        "",
        "mpi_Send",
    ] {
        let text = format!("{name}{tail}");
        let mut s = text.as_bytes();
        assert_eq!(call_head(&mut s), None, "{text}");
        assert_eq!(s, text.as_bytes());
    }
}

/// Random edits of valid lines: the fast path never panics, and whatever it accepts,
/// serde reads the same way.
#[test]
fn mutated_lines_are_declined_or_read_as_serde_reads_them() {
    const ALPHABET: &[u8] = b"0123456789-+.eE\"\\,:{}[] \n\tabnulrs_\x00\x1f\x7f\xc3\xa9\xff";
    let mut rng = Rng(4);
    let mut lines: Vec<Vec<u8>> = EXAMPLES.iter().map(|l| l.as_bytes().to_vec()).collect();
    lines.extend((0..50).map(|_| {
        let event = random_event(&mut rng);
        written(rng.u64() as u32, &event).into_bytes()
    }));
    let mut accepted = 0;
    for _ in 0..100_000 {
        let mut line = lines[rng.below(lines.len() as u64) as usize].clone();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(line.len() as u64 + 1) as usize;
            let byte = ALPHABET[rng.below(ALPHABET.len() as u64) as usize];
            match rng.below(3) {
                0 if at < line.len() => line[at] = byte,
                1 if at < line.len() => {
                    line.remove(at);
                }
                _ => line.insert(at, byte),
            }
        }
        if via_fast(&line).is_some() {
            accepted += 1;
        }
        assert_sound(&line);
    }
    // Many edits (digits in numbers, bytes of names) leave a valid line.
    assert!(accepted > 1000, "{accepted}");
}
