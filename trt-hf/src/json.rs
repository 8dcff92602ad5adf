//! JSON config files read field by field, so that a field of the wrong type
//! is an error naming the file and the field (`config.json: hidden_size:
//! expected a whole number, found "big"`), not a line and column.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::{Error, Result};

/// Config files are small; anything past this is not a config file.
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// Reads `path` into `T` (whole-file errors name the file).
pub(crate) fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = read_text(path)?;
    serde_json::from_str(&text).map_err(|e| Error::config(path, "(file)", e.to_string()))
}

fn read_text(path: &Path) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(Error::io(path))?;
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(Error::config(path, "(file)", format!("{} bytes; a config file is at most {MAX_CONFIG_BYTES}", meta.len())));
    }
    std::fs::read_to_string(path).map_err(Error::io(path))
}

/// A JSON object's fields, with the file they came from.
#[derive(Debug, Clone)]
pub struct Fields {
    path: PathBuf,
    map: Map<String, Value>,
}

impl Fields {
    /// Reads `path`, which must hold a JSON object.
    pub fn read(path: &Path) -> Result<Fields> {
        Self::parse(path, &read_text(path)?)
    }

    /// Parses `text` as the contents of `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Fields> {
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(Fields { path: path.to_owned(), map }),
            Ok(other) => Err(Error::config(path, "(file)", format!("expected a JSON object, found {}", kind(&other)))),
            Err(e) => Err(Error::config(path, "(file)", e.to_string())),
        }
    }

    /// The fields of the object in field `name`, if present.
    pub fn object(&self, name: &str) -> Result<Option<Fields>> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) => Ok(Some(Fields { path: self.path.clone(), map: m.clone() })),
            Some(v) => Err(self.wrong(name, "an object", v)),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The raw value of `name`.
    pub fn value(&self, name: &str) -> Option<&Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    /// The map itself.
    pub fn map(&self) -> &Map<String, Value> {
        &self.map
    }

    /// An error about field `name`.
    pub fn error(&self, name: &str, problem: impl Into<String>) -> Error {
        Error::config(&self.path, name, problem)
    }

    fn wrong(&self, name: &str, expected: &str, v: &Value) -> Error {
        self.error(name, format!("expected {expected}, found {}", short(v)))
    }

    /// A whole number field, if present.
    pub fn opt_usize(&self, name: &str) -> Result<Option<usize>> {
        match self.value(name) {
            None => Ok(None),
            Some(v) => v.as_u64().and_then(|n| usize::try_from(n).ok()).map(Some).ok_or_else(|| self.wrong(name, "a whole number", v)),
        }
    }

    /// A whole number field that must be there.
    pub fn usize(&self, name: &str) -> Result<usize> {
        self.opt_usize(name)?.ok_or_else(|| self.error(name, "missing"))
    }

    /// A whole number field that must be there and at least 1, at most `max`.
    pub fn count(&self, name: &str, max: usize) -> Result<usize> {
        let n = self.usize(name)?;
        if n == 0 || n > max {
            return Err(self.error(name, format!("{n} is outside 1..={max}")));
        }
        Ok(n)
    }

    /// A signed whole number field, if present.
    pub fn opt_i64(&self, name: &str) -> Result<Option<i64>> {
        match self.value(name) {
            None => Ok(None),
            Some(v) => v.as_i64().map(Some).ok_or_else(|| self.wrong(name, "a whole number", v)),
        }
    }

    /// A number field, if present.
    pub fn opt_f64(&self, name: &str) -> Result<Option<f64>> {
        match self.value(name) {
            None => Ok(None),
            Some(v) => v.as_f64().filter(|x| x.is_finite()).map(Some).ok_or_else(|| self.wrong(name, "a number", v)),
        }
    }

    /// A string field, if present.
    pub fn opt_str(&self, name: &str) -> Result<Option<&str>> {
        match self.value(name) {
            None => Ok(None),
            Some(v) => v.as_str().map(Some).ok_or_else(|| self.wrong(name, "a string", v)),
        }
    }

    /// A boolean field, if present.
    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>> {
        match self.value(name) {
            None => Ok(None),
            Some(v) => v.as_bool().map(Some).ok_or_else(|| self.wrong(name, "true or false", v)),
        }
    }

    /// A list of strings, if present.
    pub fn opt_strings(&self, name: &str) -> Result<Option<Vec<String>>> {
        match self.value(name) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string).ok_or_else(|| self.wrong(name, "a list of strings", v)))
                .collect::<Result<Vec<_>>>()
                .map(Some),
            Some(v) => Err(self.wrong(name, "a list of strings", v)),
        }
    }

    /// An object of strings to strings (`prompts`, `id2label`), in key order, if present.
    pub fn opt_string_map(&self, name: &str) -> Result<Option<Vec<(String, String)>>> {
        let Some(obj) = self.object(name)? else { return Ok(None) };
        let mut out = Vec::with_capacity(obj.map.len());
        for (k, v) in &obj.map {
            let s = v.as_str().ok_or_else(|| self.wrong(&format!("{name}.{k}"), "a string", v))?;
            out.push((k.clone(), s.to_string()));
        }
        Ok(Some(out))
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A value for a message: short ones as they are, long ones by kind.
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() <= 40 {
        s
    } else {
        kind(v).to_string()
    }
}
