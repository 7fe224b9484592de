//! Reading the text isl prints for its objects: top-level splits, parameters, braces,
//! the statement names of a union set and their natural order (`S_2` before `S_10`).

/// Splits `s` at `sep` where no bracket, brace or parenthesis is open.
pub(crate) fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            c if c == sep && depth == 0 => {
                parts.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// The byte index of the bracket closing the one at `open` (which must be `(`, `[` or `{`).
pub(crate) fn matching(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Drops isl's parameter prefix: `[H, W] -> { ... }` → `{ ... }`.
pub(crate) fn strip_params(s: &str) -> &str {
    let s = s.trim();
    if s.starts_with('[') {
        if let Some(close) = matching(s, 0) {
            if let Some(rest) = s[close + 1..].trim_start().strip_prefix("->") {
                let rest = rest.trim_start();
                // `[..] -> [..]` is a parameter prefix only if what follows is an object
                // (a brace, or the bracket of a multi expression).
                if rest.starts_with('{') || rest.starts_with('[') {
                    return rest;
                }
            }
        }
    }
    s
}

/// The trimmed inside of `{ ... }`, if `s` is exactly one braced group.
pub(crate) fn braces_body(s: &str) -> Option<&str> {
    let s = s.trim();
    if s.starts_with('{') && matching(s, 0) == Some(s.len() - 1) {
        Some(s[1..s.len() - 1].trim())
    } else {
        None
    }
}

/// Sort key that orders statement names naturally: `S_2` before `S_10`.
pub(crate) fn natural_key(name: &str) -> (String, u64, String) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, num) = name.split_at(name.len() - digits);
    (
        stem.to_string(),
        num.parse::<u64>().unwrap_or(0),
        name.to_string(),
    )
}

/// The statement (tuple) names of an isl union set text, in order, each once.
pub(crate) fn tuple_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    if let Some(body) = braces_body(strip_params(text)) {
        for p in split_top(body, ';') {
            let p = p.trim();
            let name = p.split('[').next().unwrap_or("").trim();
            if !name.is_empty() && !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    names
}
