//! Kubernetes resource quantities ("250m", "1.5", "128Mi", "1e9", "2G") as the API machinery's
//! grammar defines them (k8s.io/apimachinery/pkg/api/resource):
//!   quantity ::= signedNumber suffix;  suffix ::= binarySI | decimalExponent | decimalSI
//!   binarySI ::= Ki|Mi|Gi|Ti|Pi|Ei;  decimalSI ::= m | "" | k|M|G|T|P|E;  decimalExponent ::= (e|E) signedNumber
//!   numericValue ::= digits | digits.digits | digits. | .digits
//! Hand-written: the grammar is a few lines, and the crates that parse it pull in k8s-openapi and
//! a decimal library for the two conversions the agent needs.
use anyhow::Result;

/// An exact non-negative quantity: `digits` × 10^`exp10` × 2^`exp2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    digits: u128,
    exp10: i32,
    exp2: u32,
}

impl Quantity {
    /// Parses `s`; the error names the value and what is wrong with it. Negative quantities are
    /// refused (a request cannot be negative).
    pub fn parse(s: &str) -> Result<Quantity> {
        let bad = |why: &str| anyhow::anyhow!("quantity {s:?}: {why}");
        let b = s.as_bytes();
        let mut i = 0;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            if b[i] == b'-' {
                return Err(bad("negative"));
            }
            i += 1;
        }
        let (mut digits, mut exp10, mut seen) = (0u128, 0i32, false);
        let mut push = |d: u8, frac: bool| -> Result<()> {
            digits = digits.checked_mul(10).and_then(|x| x.checked_add((d - b'0') as u128)).ok_or_else(|| bad("too many digits"))?;
            if frac {
                exp10 -= 1;
            }
            Ok(())
        };
        while i < b.len() && b[i].is_ascii_digit() {
            push(b[i], false)?;
            seen = true;
            i += 1;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                push(b[i], true)?;
                seen = true;
                i += 1;
            }
        }
        if !seen {
            return Err(bad("no number"));
        }
        let (mut exp10, mut exp2) = (exp10, 0u32);
        match &s[i..] {
            "" => {}
            "m" => exp10 -= 3,
            "k" => exp10 += 3,
            "M" => exp10 += 6,
            "G" => exp10 += 9,
            "T" => exp10 += 12,
            "P" => exp10 += 15,
            "E" => exp10 += 18,
            "Ki" => exp2 = 10,
            "Mi" => exp2 = 20,
            "Gi" => exp2 = 30,
            "Ti" => exp2 = 40,
            "Pi" => exp2 = 50,
            "Ei" => exp2 = 60,
            e if e.starts_with(['e', 'E']) => {
                let n = &e[1..];
                let body = n.strip_prefix(['+', '-']).unwrap_or(n);
                if body.is_empty() || !body.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(bad(&format!("exponent {e:?} is not (e|E) followed by an integer")));
                }
                let x: i32 = n.parse().ok().filter(|x: &i32| x.abs() <= 1000).ok_or_else(|| bad("exponent out of range"))?;
                exp10 += x;
            }
            other => return Err(bad(&format!("unknown suffix {other:?} (want m, k, M, G, T, P, E, Ki..Ei or an exponent)"))),
        }
        Ok(Quantity { digits, exp10, exp2 })
    }

    /// The value as a float (CPU cores): correctly rounded for quantities like 250m and 1.5.
    pub fn as_f64(&self) -> f64 {
        let v = self.digits as f64 * 2f64.powi(self.exp2 as i32);
        if self.exp10 >= 0 {
            v * 10f64.powi(self.exp10)
        } else {
            v / 10f64.powi(-self.exp10)
        }
    }

    /// The value in whole units rounded up, as Kubernetes' Quantity.Value() (memory bytes);
    /// an error naming `s` when it exceeds i64.
    pub fn ceil_i64(&self, s: &str) -> Result<i64> {
        let too_large = || anyhow::anyhow!("quantity {s:?}: too large");
        if self.digits == 0 {
            return Ok(0);
        }
        let scaled = self.digits.checked_mul(1u128.checked_shl(self.exp2).ok_or_else(too_large)?).ok_or_else(too_large)?;
        let v = if self.exp10 >= 0 {
            let p = 10u128.checked_pow(self.exp10 as u32).ok_or_else(too_large)?;
            scaled.checked_mul(p).ok_or_else(too_large)?
        } else {
            match 10u128.checked_pow(-self.exp10 as u32) {
                Some(p) => scaled.div_ceil(p),
                None => 1, // a positive value smaller than 10^-38 rounds up to 1
            }
        };
        i64::try_from(v).map_err(|_| too_large())
    }
}

/// CPU in cores from a quantity string.
pub fn cpu_cores(s: &str) -> Result<f64> {
    Ok(Quantity::parse(s)?.as_f64())
}

/// Bytes (rounded up) from a quantity string.
pub fn bytes(s: &str) -> Result<i64> {
    Quantity::parse(s)?.ceil_i64(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_quantities() {
        for (s, want) in [("250m", 0.25), ("1", 1.0), ("1.5", 1.5), ("0.1", 0.1), ("100m", 0.1), (".5", 0.5), ("2.", 2.0), ("+3", 3.0), ("1e-3", 0.001), ("5E-1", 0.5), ("0", 0.0), ("1k", 1000.0)] {
            assert_eq!(cpu_cores(s).unwrap(), want, "{s}");
        }
    }

    #[test]
    fn memory_quantities() {
        for (s, want) in [
            ("128Mi", 128 << 20),
            ("1Gi", 1 << 30),
            ("1.5Ki", 1536),
            ("1G", 1_000_000_000),
            ("512M", 512_000_000),
            ("1e9", 1_000_000_000),
            ("1E9", 1_000_000_000),
            ("1e+3", 1000),
            ("2k", 2000),
            ("1E", 1_000_000_000_000_000_000),
            ("7Ei", 7 << 60),
            ("129", 129),
            ("0.5", 1),
            ("1500m", 2),
            ("1e-50", 1),
            ("0e5", 0),
            ("00000000000000000000000000000000000000000000012", 12),
        ] {
            assert_eq!(bytes(s).unwrap(), want, "{s}");
        }
    }

    #[test]
    fn bad_quantities_name_the_value() {
        for (s, want) in [
            ("", "no number"),
            (".", "no number"),
            ("Mi", "no number"),
            ("-1", "negative"),
            ("1K", "unknown suffix \"K\""),
            ("1mi", "unknown suffix \"mi\""),
            ("1 Gi", "unknown suffix \" Gi\""),
            ("1e", "exponent \"e\""),
            ("1e1.5", "exponent \"e1.5\""),
            ("1e99999", "exponent out of range"),
            ("1.2.3", "unknown suffix \".3\""),
            ("123456789012345678901234567890123456789012", "too many digits"),
        ] {
            let e = format!("{:#}", Quantity::parse(s).unwrap_err());
            assert!(e.contains(&format!("quantity {s:?}")) && e.contains(want), "{e:?} should name {s:?} and say {want:?}");
        }
        for s in ["8Ei", "10E", "1e100"] {
            let e = format!("{:#}", bytes(s).unwrap_err());
            assert!(e.contains(&format!("quantity {s:?}: too large")), "{e}");
        }
    }
}
