//! Typed access to the fields of a record apache-avro decoded, with errors naming the field.
use anyhow::{anyhow, bail, Context, Result};
use apache_avro::types::Value;

use crate::shared::net::NatTuple;

/// Typed access to the fields of a decoded record, with errors naming the field.
pub(crate) struct RecordFields<'a>(&'a [(String, Value)]);

impl<'a> RecordFields<'a> {
    pub(crate) fn of(v: &'a Value) -> Result<Self> {
        match v {
            Value::Record(fields) => Ok(RecordFields(fields)),
            o => bail!("expected a record, got {o:?}"),
        }
    }

    pub(crate) fn get(&self, name: &str) -> Result<&'a Value> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v).ok_or_else(|| anyhow!("missing field {name}"))
    }

    pub(crate) fn long(&self, name: &str) -> Result<i64> {
        match self.get(name)? {
            Value::Long(x) => Ok(*x),
            Value::Int(x) => Ok(*x as i64),
            o => bail!("{name}: expected long, got {o:?}"),
        }
    }

    pub(crate) fn int(&self, name: &str) -> Result<i32> {
        match self.get(name)? {
            Value::Int(x) => Ok(*x),
            o => bail!("{name}: expected int, got {o:?}"),
        }
    }

    /// An int that must be a TCP port (0..=65535): a wider value is refused, not truncated.
    pub(crate) fn port(&self, name: &str) -> Result<u16> {
        let v = self.int(name)?;
        u16::try_from(v).map_err(|_| anyhow!("{name}: {v} is not a port (0..=65535)"))
    }

    pub(crate) fn double(&self, name: &str) -> Result<f64> {
        match self.get(name)? {
            Value::Double(x) => Ok(*x),
            o => bail!("{name}: expected double, got {o:?}"),
        }
    }

    pub(crate) fn boolean(&self, name: &str) -> Result<bool> {
        match self.get(name)? {
            Value::Boolean(b) => Ok(*b),
            o => bail!("{name}: expected boolean, got {o:?}"),
        }
    }

    pub(crate) fn string(&self, name: &str) -> Result<String> {
        match self.get(name)? {
            Value::String(s) => Ok(s.clone()),
            o => bail!("{name}: expected string, got {o:?}"),
        }
    }

    pub(crate) fn symbol(&self, name: &str) -> Result<&'a str> {
        match self.get(name)? {
            Value::Enum(_, s) => Ok(s.as_str()),
            o => bail!("{name}: expected enum, got {o:?}"),
        }
    }

    pub(crate) fn fixed16(&self, name: &str) -> Result<[u8; 16]> {
        match self.get(name)? {
            Value::Fixed(16, b) => Ok(b.as_slice().try_into().expect("16 bytes")),
            o => bail!("{name}: expected fixed(16), got {o:?}"),
        }
    }

    /// The branch of a `["null", T]` union: None for null.
    fn optional(&self, name: &str) -> Result<Option<&'a Value>> {
        match self.get(name)? {
            Value::Union(_, b) => Ok(match b.as_ref() {
                Value::Null => None,
                x => Some(x),
            }),
            o => bail!("{name}: expected union, got {o:?}"),
        }
    }

    pub(crate) fn opt_string(&self, name: &str) -> Result<Option<String>> {
        match self.optional(name)? {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(o) => bail!("{name}: unexpected union branch {o:?}"),
        }
    }

    pub(crate) fn opt_long(&self, name: &str) -> Result<Option<i64>> {
        match self.optional(name)? {
            None => Ok(None),
            Some(Value::Long(x)) => Ok(Some(*x)),
            Some(o) => bail!("{name}: unexpected union branch {o:?}"),
        }
    }

    pub(crate) fn opt_int(&self, name: &str) -> Result<Option<i32>> {
        match self.optional(name)? {
            None => Ok(None),
            Some(Value::Int(x)) => Ok(Some(*x)),
            Some(o) => bail!("{name}: unexpected union branch {o:?}"),
        }
    }

    pub(crate) fn opt_double(&self, name: &str) -> Result<Option<f64>> {
        match self.optional(name)? {
            None => Ok(None),
            Some(Value::Double(x)) => Ok(Some(*x)),
            Some(o) => bail!("{name}: unexpected union branch {o:?}"),
        }
    }

    pub(crate) fn opt_nat(&self, name: &str) -> Result<Option<NatTuple>> {
        match self.optional(name)? {
            None => Ok(None),
            Some(v) => {
                let n = RecordFields::of(v).with_context(|| name.to_string())?;
                Ok(Some(NatTuple {
                    local_addr: n.fixed16("localAddress")?,
                    local_port: n.port("localPort")?,
                    remote_addr: n.fixed16("remoteAddress")?,
                    remote_port: n.port("remotePort")?,
                }))
            }
        }
    }

    pub(crate) fn array<T>(&self, name: &str, item: impl Fn(&Value) -> Option<T>) -> Result<Vec<T>> {
        match self.get(name)? {
            Value::Array(a) => a.iter().map(|x| item(x).ok_or_else(|| anyhow!("{name}: unexpected item {x:?}"))).collect(),
            o => bail!("{name}: expected array, got {o:?}"),
        }
    }
}
