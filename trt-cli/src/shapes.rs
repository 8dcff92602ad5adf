//! `--min-shapes/--opt-shapes/--max-shapes`: trtexec's syntax, turned into one
//! [`trt::ProfileSpec`]; and `--profile`, one full profile per flag.
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
//! A flag that is given but does not name an input that another flag names
//! fills that input's shape as above with a warning; a missing min is then
//! taken from an input of the same declared shape when `--min-shapes` names one.
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

    /// One optimization profile for `inputs`, or `None` when no flag was given,
    /// with a warning for every shape filled in because a flag that was given
    /// does not name that input (so nothing is silently fixed at its max).
    pub fn profile(&self, inputs: &[TensorInfo]) -> Result<Option<(ProfileSpec, Vec<String>)>> {
        if self.is_empty() {
            return Ok(None);
        }
        type Slots = [Option<Vec<i64>>; 3];
        const FLAGS: [&str; 3] = ["--min-shapes", "--opt-shapes", "--max-shapes"];
        let mut by_name: BTreeMap<String, Slots> = BTreeMap::new();
        for (slot, lists) in [&self.min, &self.opt, &self.max].into_iter().enumerate() {
            for (name, dims) in lists.iter().flat_map(|l| &l.0) {
                let entry = by_name.entry(name.clone()).or_default();
                if entry[slot].replace(dims.clone()).is_some() {
                    return Err(CliError::new(format!("{} gives input '{name}' twice", FLAGS[slot])));
                }
            }
        }
        let given = [!self.min.is_empty(), !self.opt.is_empty(), !self.max.is_empty()];
        let one_kind = given.iter().filter(|&&g| g).count() == 1;
        let declared = |name: &str| inputs.iter().find(|i| i.name == name).map(|i| i.dims.as_slice());
        let mut spec = ProfileSpec::new();
        let mut warnings = Vec::new();
        for (name, [min, opt, max]) in &by_name {
            let missing = [min.is_none(), opt.is_none(), max.is_none()];
            // max missing: max = opt (else min); opt missing: opt = max.
            let Some(max_v) = max.clone().or_else(|| opt.clone()).or_else(|| min.clone()) else {
                unreachable!("an entry exists only once a shape was given")
            };
            let opt_v = opt.clone().unwrap_or_else(|| max_v.clone());
            let min_v = match min {
                Some(m) => m.clone(),
                // Only one kind of flag at all: that shape is fixed, as in trtexec.
                None if one_kind => max_v.clone(),
                None => match matching_min(name, declared(name), &by_name, &declared) {
                    Some((other, m)) => {
                        if given[0] {
                            warnings.push(format!(
                                "--min-shapes does not name input '{name}': its min is {} as for '{other}', the input of the same declared shape",
                                output::dims(&m)
                            ));
                        }
                        m
                    }
                    None => {
                        let m = default_min(declared(name), &opt_v);
                        if given[0] {
                            warnings.push(format!(
                                "--min-shapes does not name input '{name}': its min is {} (1 in each dynamic dimension)",
                                output::dims(&m)
                            ));
                        }
                        m
                    }
                },
            };
            if !one_kind {
                if given[1] && missing[1] {
                    warnings.push(format!("--opt-shapes does not name input '{name}': its opt is its max {}", output::dims(&opt_v)));
                }
                if given[2] && missing[2] {
                    let from = if missing[1] { "min" } else { "opt" };
                    warnings.push(format!("--max-shapes does not name input '{name}': its max is its {from} {}", output::dims(&max_v)));
                }
            }
            spec = spec.with(name, ShapeRange { min: min_v, opt: opt_v, max: max_v });
        }
        Ok(Some((spec, warnings)))
    }
}

/// The min of another input with the same declared shape (e.g. `attention_mask`
/// for `input_ids`), when `--min-shapes` names one.
fn matching_min<'a>(
    name: &str,
    declared: Option<&[i64]>,
    by_name: &'a BTreeMap<String, [Option<Vec<i64>>; 3]>,
    declared_of: &dyn Fn(&str) -> Option<&'a [i64]>,
) -> Option<(String, Vec<i64>)> {
    let declared = declared?;
    by_name.iter().find_map(|(other, slots)| match &slots[0] {
        Some(m) if other != name && declared_of(other) == Some(declared) => Some((other.clone(), m.clone())),
        _ => None,
    })
}

/// One `--profile` argument: `NAME:MIN,OPT,MAX[;NAME:MIN,OPT,MAX...]`, every
/// input's full range (one shape alone is a fixed shape), e.g.
/// `input_ids:1x1,8x128,32x128;attention_mask:1x1,8x128,32x128`.
pub fn parse_profile(arg: &str) -> std::result::Result<ProfileSpec, String> {
    let mut spec = ProfileSpec::new();
    for item in arg.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, shapes) =
            item.rsplit_once(':').ok_or_else(|| format!("'{item}' is not NAME:MIN,OPT,MAX (e.g. input_ids:1x1,8x128,32x128)"))?;
        if name.is_empty() {
            return Err(format!("'{item}' has no tensor name before ':'"));
        }
        let parsed = shapes
            .split(',')
            .map(|s| parse_list(&format!("{name}:{s}")).map(|l| l.0[0].1.clone()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let range = match parsed.as_slice() {
            [fixed] => ShapeRange::fixed(fixed),
            [min, opt, max] => ShapeRange::new(min, opt, max),
            _ => return Err(format!("'{item}': give MIN,OPT,MAX (three shapes) or one fixed shape, not {}", parsed.len())),
        };
        range.check_order().map_err(|reason| format!("'{item}': {reason}"))?;
        if spec.ranges.insert(name.to_owned(), range).is_some() {
            return Err(format!("--profile gives input '{name}' twice"));
        }
    }
    if spec.ranges.is_empty() {
        return Err("empty profile (expected NAME:MIN,OPT,MAX[;NAME:MIN,OPT,MAX...])".into());
    }
    Ok(spec)
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
        let range = |f: ShapeFlags, name: &str| f.profile(&inputs).unwrap().unwrap().0.ranges[name].clone();
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
    fn partial_flags_warn_and_never_fix_at_max() {
        let inputs = [input("input_ids", &[-1, -1]), input("attention_mask", &[-1, -1]), input("x", &[-1, 8])];
        let flags = ShapeFlags {
            min: vec![parse_list("input_ids:1x1").unwrap()],
            opt: vec![],
            max: vec![parse_list("input_ids:32x128,attention_mask:32x128,x:4x8").unwrap()],
        };
        let (spec, warnings) = flags.profile(&inputs).unwrap().unwrap();
        // The input of the same declared shape lends its min; the other gets 1s.
        assert_eq!(spec.ranges["attention_mask"], ShapeRange::new(&[1, 1], &[32, 128], &[32, 128]));
        assert_eq!(spec.ranges["x"], ShapeRange::new(&[1, 8], &[4, 8], &[4, 8]));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("'attention_mask'") && warnings[0].contains("as for 'input_ids'"), "{warnings:?}");
        assert!(warnings[1].contains("'x'") && warnings[1].contains("1 in each dynamic dimension"), "{warnings:?}");
        // Fully given inputs and a single kind of flag warn about nothing.
        let fixed = ShapeFlags { max: vec![parse_list("input_ids:2x3").unwrap()], ..Default::default() };
        assert!(fixed.profile(&inputs).unwrap().unwrap().1.is_empty());
    }

    #[test]
    fn parses_full_profiles() {
        let p = parse_profile("input_ids:1x1,8x128,32x128; attention_mask:1x1,8x128,32x128;s:4").unwrap();
        assert_eq!(p.ranges["input_ids"], ShapeRange::new(&[1, 1], &[8, 128], &[32, 128]));
        assert_eq!(p.ranges["attention_mask"], p.ranges["input_ids"]);
        assert_eq!(p.ranges["s"], ShapeRange::fixed(&[4]));
        for bad in ["", "a", "a:1x1,2x2", "a:2x2,1x1,3x3", "a:1x1,2x2,3", "a:1,1,1;a:2,2,2", ":1,1,1"] {
            assert!(parse_profile(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn missing_message_lists_inputs_and_an_example() {
        let inputs = [input("a", &[-1, -1]), input("b", &[-1, 64])];
        let m = missing_shapes_message("m.onnx", &["a".into(), "b".into()], &inputs);
        assert!(m.contains("a [-1, -1], b [-1, 64]"), "{m}");
        assert!(m.contains("--min-shapes a:1x1,b:1x64 --opt-shapes a:8x128,b:8x64 --max-shapes a:32x128,b:32x64"), "{m}");
    }
}
