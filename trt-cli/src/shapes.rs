//! `--min-shapes/--opt-shapes/--max-shapes`: trtexec's syntax, turned into one
//! [`trt::ProfileSpec`].
//!
//! Syntax: `name:AxB[,name2:CxD...]`, e.g. `input_ids:1x16,attention_mask:1x16`.
//! The name is everything before the last `:` (ONNX names such as `x:0` work);
//! an empty shape (`name:`) is a scalar. A flag may be repeated; its lists add up.
//!
//! Missing shapes, per input (documented in `trt build --help`):
//! - only one of min/opt/max given: that shape for all three (a fixed shape,
//!   as trtexec does when it is given one shape);
//! - opt missing: opt = max (TensorRT tunes its kernels for the largest
//!   shape, which keeps the worst case fast; pass `--opt-shapes` to tune for a
//!   typical shape instead);
//! - max missing: max = opt;
//! - min missing: 1 in every dynamic dimension of the network input, its
//!   declared size in the others (the engine then accepts anything up to max).
//!
//! Everything else (unknown names, ranks, min <= opt <= max, fixed dimensions,
//! uncovered dynamic inputs) is checked by [`trt::ProfileSpec::validate`].

use std::collections::BTreeMap;

use trt::{ProfileSpec, ShapeRange, TensorInfo};

use crate::error::{CliError, Result};
use crate::output;

/// One flag's list: input name to shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShapeList(pub Vec<(String, Vec<i64>)>);

/// clap value parser for one `--*-shapes` argument.
pub fn parse_list(arg: &str) -> std::result::Result<ShapeList, String> {
    let mut list = Vec::new();
    for item in arg.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, dims) = item.rsplit_once(':').ok_or_else(|| format!("'{item}' is not NAME:SHAPE (e.g. input_ids:1x16)"))?;
        if name.is_empty() {
            return Err(format!("'{item}' has no tensor name before ':'"));
        }
        let dims = if dims.trim().is_empty() {
            Vec::new()
        } else {
            dims.split(['x', 'X'])
                .map(|d| {
                    d.trim()
                        .parse::<i64>()
                        .ok()
                        .filter(|&v| v >= 0)
                        .ok_or_else(|| format!("'{item}': '{d}' is not a dimension (a whole number >= 0; shapes look like 8x128)"))
                })
                .collect::<std::result::Result<Vec<_>, _>>()?
        };
        list.push((name.to_owned(), dims));
    }
    if list.is_empty() {
        return Err("no shapes given (expected NAME:SHAPE[,NAME:SHAPE...], e.g. input_ids:1x16)".into());
    }
    Ok(ShapeList(list))
}

/// The three flags as given (each possibly repeated).
#[derive(Debug, Clone, Default)]
pub struct ShapeFlags {
    /// `--min-shapes`.
    pub min: Vec<ShapeList>,
    /// `--opt-shapes`.
    pub opt: Vec<ShapeList>,
    /// `--max-shapes`.
    pub max: Vec<ShapeList>,
}

impl ShapeFlags {
    /// No shape given at all.
    pub fn is_empty(&self) -> bool {
        self.min.is_empty() && self.opt.is_empty() && self.max.is_empty()
    }

    /// One optimization profile for `inputs`, or `None` when no flag was given.
    pub fn profile(&self, inputs: &[TensorInfo]) -> Result<Option<ProfileSpec>> {
        if self.is_empty() {
            return Ok(None);
        }
        type Slots = [Option<Vec<i64>>; 3];
        let mut by_name: BTreeMap<String, Slots> = BTreeMap::new();
        for (slot, (flag, lists)) in
            [("--min-shapes", &self.min), ("--opt-shapes", &self.opt), ("--max-shapes", &self.max)].into_iter().enumerate()
        {
            for (name, dims) in lists.iter().flat_map(|l| &l.0) {
                let entry = by_name.entry(name.clone()).or_default();
                if entry[slot].replace(dims.clone()).is_some() {
                    return Err(CliError::new(format!("{flag} gives input '{name}' twice")));
                }
            }
        }
        let mut spec = ProfileSpec::new();
        for (name, [min, opt, max]) in by_name {
            let declared = inputs.iter().find(|i| i.name == name).map(|i| i.dims.as_slice());
            let range = match (min, opt, max) {
                (Some(a), Some(b), Some(c)) => ShapeRange { min: a, opt: b, max: c },
                (Some(s), None, None) | (None, Some(s), None) | (None, None, Some(s)) => ShapeRange::fixed(&s),
                (Some(a), None, Some(c)) => ShapeRange { min: a, opt: c.clone(), max: c },
                (Some(a), Some(b), None) => ShapeRange { min: a, opt: b.clone(), max: b },
                (None, Some(b), Some(c)) => ShapeRange { min: default_min(declared, &b), opt: b, max: c },
                (None, None, None) => unreachable!("an entry exists only once a shape was given"),
            };
            spec = spec.with(&name, range);
        }
        Ok(Some(spec))
    }
}

/// 1 in the dynamic dimensions, the declared size elsewhere; when the input is
/// unknown or of another rank, `like` (validation then reports the problem).
fn default_min(declared: Option<&[i64]>, like: &[i64]) -> Vec<i64> {
    match declared {
        Some(d) if d.len() == like.len() => d.iter().map(|&v| if v < 0 { 1 } else { v }).collect(),
        _ => like.to_vec(),
    }
}

/// The CLI's message for dynamic inputs no shape covers: the inputs with their
/// declared shapes, and flags that would work as a starting point.
pub fn missing_shapes_message(model: &str, missing: &[String], inputs: &[TensorInfo]) -> String {
    let described: Vec<String> = missing
        .iter()
        .map(|name| match inputs.iter().find(|i| &i.name == name) {
            Some(i) => format!("{name} {}", output::shape(&i.dims)),
            None => name.clone(),
        })
        .collect();
    let example = |pick: fn(usize) -> i64| -> String {
        missing
            .iter()
            .filter_map(|name| inputs.iter().find(|i| &i.name == name))
            .map(|i| {
                let d: Vec<i64> = i.dims.iter().enumerate().map(|(k, &v)| if v < 0 { pick(k) } else { v }).collect();
                format!("{}:{}", i.name, output::dims(&d))
            })
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        "{model}: dynamic input(s) without shapes: {}; give their range with --min-shapes/--opt-shapes/--max-shapes, \
         e.g. --min-shapes {} --opt-shapes {} --max-shapes {}",
        described.join(", "),
        example(|_| 1),
        example(|k| if k == 0 { 8 } else { 128 }),
        example(|k| if k == 0 { 32 } else { 128 }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use trt::DataType;

    fn input(name: &str, dims: &[i64]) -> TensorInfo {
        TensorInfo { name: name.into(), dtype: DataType::Int32, dims: dims.to_vec(), is_shape_tensor: false }
    }

    #[test]
    fn parses_trtexec_syntax() {
        let l = parse_list("input_ids:1x16, attention_mask:1X16,x:0:4,s:").unwrap();
        assert_eq!(
            l.0,
            vec![("input_ids".into(), vec![1, 16]), ("attention_mask".into(), vec![1, 16]), ("x:0".into(), vec![4]), ("s".into(), vec![]),]
        );
        for bad in ["", "input_ids", ":1x2", "a:1xb", "a:-1x2", "a:1x"] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn missing_shapes_default_as_documented() {
        let inputs = [input("a", &[-1, -1]), input("b", &[-1, 64])];
        let flags = |min: &str, opt: &str, max: &str| ShapeFlags {
            min: (!min.is_empty()).then(|| parse_list(min).unwrap()).into_iter().collect(),
            opt: (!opt.is_empty()).then(|| parse_list(opt).unwrap()).into_iter().collect(),
            max: (!max.is_empty()).then(|| parse_list(max).unwrap()).into_iter().collect(),
        };
        let range = |f: ShapeFlags, name: &str| f.profile(&inputs).unwrap().unwrap().ranges[name].clone();
        assert_eq!(range(flags("a:2x3", "", ""), "a"), ShapeRange::fixed(&[2, 3]));
        assert_eq!(range(flags("", "", "a:2x3"), "a"), ShapeRange::fixed(&[2, 3]));
        assert_eq!(range(flags("a:1x1", "", "a:8x9"), "a"), ShapeRange::new(&[1, 1], &[8, 9], &[8, 9]));
        assert_eq!(range(flags("a:1x1", "a:4x4", ""), "a"), ShapeRange::new(&[1, 1], &[4, 4], &[4, 4]));
        assert_eq!(range(flags("", "b:4x64", "b:8x64"), "b"), ShapeRange::new(&[1, 64], &[4, 64], &[8, 64]));
        assert!(flags("", "", "").profile(&inputs).unwrap().is_none());
        let twice = ShapeFlags { min: vec![parse_list("a:1x1").unwrap(), parse_list("a:2x2").unwrap()], ..Default::default() };
        assert!(twice.profile(&inputs).unwrap_err().to_string().contains("twice"));
    }

    #[test]
    fn missing_message_lists_inputs_and_an_example() {
        let inputs = [input("a", &[-1, -1]), input("b", &[-1, 64])];
        let m = missing_shapes_message("m.onnx", &["a".into(), "b".into()], &inputs);
        assert!(m.contains("a [-1, -1], b [-1, 64]"), "{m}");
        assert!(m.contains("--min-shapes a:1x1,b:1x64 --opt-shapes a:8x128,b:8x64 --max-shapes a:32x128,b:32x64"), "{m}");
    }
}
