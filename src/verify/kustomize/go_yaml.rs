//! YAML scalars and tags as go-yaml v2 (the YAML of `sigs.k8s.io/yaml`) reads them.

/// The first tag in `text` (line, column), read with the YAML parser's own events: fluxmend's
/// span tree keeps only scalars' tags. Text that does not parse strictly counts as tagged when
/// it holds a `!` anywhere (cannot be told apart).
pub fn first_tag(text: &str) -> Option<(usize, usize)> {
    use saphyr_parser::{Event, Parser};
    let mut parser = Parser::new_from_str(text);
    loop {
        match parser.next_event() {
            None => return None,
            Some(Err(e)) => {
                return text
                    .contains('!')
                    .then(|| (e.marker().line(), e.marker().col() + 1));
            }
            Some(Ok((event, span))) => match event {
                Event::Scalar(_, _, _, Some(_))
                | Event::SequenceStart(_, Some(_))
                | Event::MappingStart(_, Some(_)) => {
                    return Some((span.start.line(), span.start.col() + 1));
                }
                Event::StreamEnd => return None,
                _ => {}
            },
        }
    }
}

/// What a plain YAML 1.1 scalar is to go-yaml v2 (the YAML of `sigs.k8s.io/yaml`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plain {
    Null,
    Bool(bool),
    Int(i64),
    /// A float, or an integer too large for 64 bits.
    Number,
    Str,
}

/// go-yaml v2's `resolve` for a plain scalar (timestamps stay strings in an `interface{}`).
pub fn resolve_plain(s: &str) -> Plain {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Plain::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Plain::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Plain::Bool(false);
        }
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
        | "-.inf" | "-.Inf" | "-.INF" => return Plain::Number,
        _ => {}
    }
    if !s.starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c)) {
        return Plain::Str;
    }
    let plain: String = s.chars().filter(|&c| c != '_').collect();
    if let Some(i) = go_parse_int(&plain) {
        return i;
    }
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    // `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        None => digits(mantissa),
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['+', '-']).unwrap_or(e)));
    if mantissa_ok && exponent_ok {
        Plain::Number
    } else {
        Plain::Str
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)` (and go-yaml's `0b` forms, and `ParseUint` beyond it).
pub(super) fn go_parse_int(s: &str) -> Option<Plain> {
    let (negative, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d.to_string())
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d.to_string())
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d.to_string())
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_string())
    } else {
        (10, lower)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    Some(match u128::from_str_radix(&digits, radix) {
        Ok(v) if negative && v <= 1 << 63 => Plain::Int((v as i128).wrapping_neg() as i64),
        Ok(v) if !negative && v <= i64::MAX as u128 => Plain::Int(v as i64),
        _ => Plain::Number,
    })
}
