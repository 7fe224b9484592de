//! Evaluates the C integer expressions the printers emit for indices (`(i - 64 * c0) *
//! 16 + k`, `polyc_imin(a, b)`), with C's semantics: `/` and `%` truncate towards zero, and
//! the index helpers (`polyc_min`, `polyc_max`, `polyc_floord` and their 32-bit `polyc_i…`
//! forms) compute what the prelude defines. Analyses that must see exactly the index a
//! kernel computes (bank conflicts, [`crate::gpu::banks`]) evaluate the printed text
//! rather than a model of it.

/// The value of the C expression `text`, with `env` giving each name's value; `None` for
/// an unknown name, a division by zero, an overflow or text outside the index grammar.
pub fn eval_c_int(text: &str, env: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
        env,
    };
    let v = p.sum()?;
    p.skip_space();
    (p.at == p.s.len()).then_some(v)
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
    env: &'a dyn Fn(&str) -> Option<i64>,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.s.get(self.at).is_some_and(|c| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_space();
        if self.s.get(self.at) == Some(&c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn sum(&mut self) -> Option<i64> {
        let mut v = self.product()?;
        loop {
            if self.eat(b'+') {
                v = v.checked_add(self.product()?)?;
            } else if self.eat(b'-') {
                v = v.checked_sub(self.product()?)?;
            } else {
                return Some(v);
            }
        }
    }

    fn product(&mut self) -> Option<i64> {
        let mut v = self.unary()?;
        loop {
            if self.eat(b'*') {
                v = v.checked_mul(self.unary()?)?;
            } else if self.eat(b'/') {
                v = v.checked_div(self.unary()?)?;
            } else if self.eat(b'%') {
                v = v.checked_rem(self.unary()?)?;
            } else {
                return Some(v);
            }
        }
    }

    fn unary(&mut self) -> Option<i64> {
        if self.eat(b'-') {
            return self.unary()?.checked_neg();
        }
        self.primary()
    }

    fn primary(&mut self) -> Option<i64> {
        if self.eat(b'(') {
            let v = self.sum()?;
            return self.eat(b')').then_some(v);
        }
        self.skip_space();
        let start = self.at;
        let first = *self.s.get(self.at)?;
        if first.is_ascii_digit() {
            while self.s.get(self.at).is_some_and(u8::is_ascii_digit) {
                self.at += 1;
            }
            return std::str::from_utf8(&self.s[start..self.at])
                .ok()?
                .parse()
                .ok();
        }
        while self
            .s
            .get(self.at)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        {
            self.at += 1;
        }
        let name = std::str::from_utf8(&self.s[start..self.at]).ok()?;
        if name.is_empty() {
            return None;
        }
        if !self.eat(b'(') {
            return (self.env)(name);
        }
        let a = self.sum()?;
        let b = if self.eat(b',') {
            self.sum()?
        } else {
            return None;
        };
        if !self.eat(b')') {
            return None;
        }
        match name {
            "polyc_min" | "polyc_imin" => Some(a.min(b)),
            "polyc_max" | "polyc_imax" => Some(a.max(b)),
            "polyc_floord" | "polyc_ifloord" => {
                let q = a.checked_div(b)?;
                Some(if a % b != 0 && ((a < 0) != (b < 0)) {
                    q - 1
                } else {
                    q
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::eval_c_int;

    #[test]
    fn c_semantics_of_the_index_grammar() {
        let env = |n: &str| match n {
            "c4" => Some(5),
            "k" => Some(-7),
            _ => None,
        };
        let ev = |t: &str| eval_c_int(t, &env);
        assert_eq!(ev("(c4) * 68 + ((k - 16 * 0)) * 4"), Some(5 * 68 - 28));
        assert_eq!(ev("k / 2"), Some(-3));
        assert_eq!(ev("k % 4"), Some(-3));
        assert_eq!(ev("polyc_ifloord(k, 2)"), Some(-4));
        assert_eq!(ev("polyc_imin(c4, -(k))"), Some(5));
        assert_eq!(ev("-(-c4)"), Some(5));
        assert_eq!(ev("c5 + 1"), None);
        assert_eq!(ev("c4 / 0"), None);
        assert_eq!(ev("c4 +"), None);
        assert_eq!(ev("c4 c4"), None);
    }
}
