//! Where a node of a YAML description is: the span of the value (or key) at a path such as
//! `buffers[1].bytes`, for located validation errors.
//!
//! serde_yaml keeps no spans in the values it builds, but it attaches the position of the
//! node being read to an error raised while reading it. [`span_of`] reads the text again
//! with a probe that walks the path (map keys by name, sequence items by index, skipping
//! everything else) and fails on purpose at the node it is after; the error's position is
//! the node's. This works for block and flow style alike, and for quoted scalars.

use polyhedral::ir::Span;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// One step of a path into a description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seg<'a> {
    /// The value of a map's key.
    Key(&'a str),
    /// A map's key itself (for errors about the name of an entry).
    KeyName(&'a str),
    /// An item of a sequence.
    Index(usize),
}

/// The message of the probe's deliberate error.
const PROBE: &str = "polyc: the node is here";

/// The span of the node at `path` in the YAML `text` (from the node's first character to
/// the end of its first token: a scalar, or the first line of a collection), if the path
/// exists.
pub fn span_of(text: &str, path: &[Seg]) -> Option<Span> {
    let de = serde_yaml::Deserializer::from_str(text);
    let err = match (Probe { path }).deserialize(de) {
        Ok(()) => return None,
        Err(e) => e,
    };
    if !err.to_string().contains(PROBE) {
        return None;
    }
    let loc = err.location()?;
    let start = offset_of(text, loc.line(), loc.column());
    Some(Span::new(start, start + token_len(&text[start..])))
}

/// The length of the token at the start of `rest`: a quoted scalar to its closing quote, a
/// plain scalar to the end of the line, a comment, or a flow separator; trailing blanks
/// excluded.
fn token_len(rest: &str) -> usize {
    let mut chars = rest.char_indices();
    match chars.next() {
        Some((_, q @ ('"' | '\''))) => {
            let mut escaped = false;
            for (i, c) in chars {
                if c == q && !escaped {
                    return i + 1;
                }
                escaped = q == '"' && c == '\\' && !escaped;
            }
            rest.find('\n').unwrap_or(rest.len())
        }
        Some(_) => {
            let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
            let mut end = line.len();
            let mut prev = ' ';
            let mut it = line.char_indices().peekable();
            while let Some((i, c)) = it.next() {
                let flow_end = matches!(c, ',' | ']' | '}') && i > 0;
                let key_end = c == ':' && it.peek().is_none_or(|(_, n)| n.is_whitespace());
                if flow_end || key_end || (c == '#' && prev.is_whitespace()) {
                    end = i;
                    break;
                }
                prev = c;
            }
            line[..end].trim_end().len()
        }
        None => 0,
    }
}

/// Walks `path`; fails with [`PROBE`] at the node it names.
struct Probe<'p, 'a> {
    path: &'p [Seg<'a>],
}

impl<'de> DeserializeSeed<'de> for Probe<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// Fails on whatever node it is given.
struct Here;

impl<'de> DeserializeSeed<'de> for Here {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(Here)
    }
}

macro_rules! fail_on {
    ($($name:ident: $t:ty),*) => {
        $(fn $name<E: de::Error>(self, _v: $t) -> Result<(), E> {
            Err(E::custom(PROBE))
        })*
    };
}

impl<'de> Visitor<'de> for Here {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any node")
    }
    fail_on!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_str: &str);
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(PROBE))
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(PROBE))
    }
    fn visit_some<D: Deserializer<'de>>(self, _d: D) -> Result<(), D::Error> {
        Err(de::Error::custom(PROBE))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _s: A) -> Result<(), A::Error> {
        Err(de::Error::custom(PROBE))
    }
    fn visit_map<A: MapAccess<'de>>(self, _m: A) -> Result<(), A::Error> {
        Err(de::Error::custom(PROBE))
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, _e: A) -> Result<(), A::Error> {
        Err(de::Error::custom(PROBE))
    }
}

/// A map key read as text (any scalar); fails at the key when it is `target`.
struct Key<'a> {
    target: Option<&'a str>,
}

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        if self.target == Some(v) {
            return Err(E::custom(PROBE));
        }
        Ok(v.to_string())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        self.visit_str(&v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Ok(String::new())
    }
}

impl<'de> Visitor<'de> for Probe<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a description")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let (name, key_itself) = match self.path.first() {
            Some(Seg::Key(k)) => (*k, false),
            Some(Seg::KeyName(k)) => (*k, true),
            _ => return drain_map(map),
        };
        let target = key_itself.then_some(name);
        while let Some(k) = map.next_key_seed(Key { target })? {
            if k == name {
                let rest = &self.path[1..];
                return if rest.is_empty() {
                    map.next_value_seed(Here)
                } else {
                    map.next_value_seed(Probe { path: rest })
                };
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some(Seg::Index(want)) = self.path.first() else {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(());
        };
        let mut i = 0;
        loop {
            if i == *want {
                let rest = &self.path[1..];
                if rest.is_empty() {
                    seq.next_element_seed(Here)?;
                } else {
                    seq.next_element_seed(Probe { path: rest })?;
                }
                return Ok(());
            }
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }
    fn visit_bool<E: de::Error>(self, _v: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _v: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _v: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _v: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _v: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Byte offset of a 1-based line and column.
pub(super) fn offset_of(text: &str, line: usize, col: usize) -> usize {
    let mut off = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            let c: usize = l
                .chars()
                .take(col.saturating_sub(1))
                .map(char::len_utf8)
                .sum();
            return (off + c).min(text.len());
        }
        off += l.len();
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<'t>(text: &'t str, path: &[Seg]) -> &'t str {
        let s = span_of(text, path).expect("found");
        &text[s.start..s.end]
    }

    #[test]
    fn values_keys_and_items_are_found() {
        let t = "name: x\nkind: gpu   # a GPU\nbuffers:\n  - name: shared\n    bytes: 0\n  - {name: reg, bytes: 0, role: registers}\n";
        assert_eq!(at(t, &[Seg::Key("kind")]), "gpu");
        assert_eq!(
            at(t, &[Seg::Key("buffers"), Seg::Index(0), Seg::Key("bytes")]),
            "0"
        );
        let s = span_of(t, &[Seg::Key("buffers"), Seg::Index(1), Seg::Key("bytes")]).expect("flow");
        assert_eq!(
            (s.start, &t[s.start..s.end]),
            (t.find("0, role").unwrap(), "0")
        );
        assert_eq!(at(t, &[Seg::KeyName("buffers")]), "buffers");
        assert_eq!(
            at(t, &[Seg::Key("buffers"), Seg::Index(1), Seg::Key("name")]),
            "reg"
        );
        assert_eq!(span_of(t, &[Seg::Key("sms")]), None);
        assert_eq!(span_of(t, &[Seg::Key("buffers"), Seg::Index(2)]), None);
    }

    #[test]
    fn quoted_scalars_span_their_quotes() {
        let t = "name: \"a # b\"\ncuda_arch: 'sm_0'\n";
        assert_eq!(at(t, &[Seg::Key("name")]), "\"a # b\"");
        assert_eq!(at(t, &[Seg::Key("cuda_arch")]), "'sm_0'");
    }
}
