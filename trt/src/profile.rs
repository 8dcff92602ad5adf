//! Optimization profiles: the range of shapes an engine accepts for each
//! dynamic input. Ranges are described in plain Rust ([`ShapeRange`],
//! [`ProfileSpec`]) and validated against the network before TensorRT sees them.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::pin::Pin;
use std::ptr::NonNull;

use trt_sys::ffi;

use crate::call::{call, call_bool};
use crate::network::TensorInfo;
use crate::{Error, Result};

/// Smallest, typical and largest shape of one input.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ShapeRange {
    /// Smallest shape accepted.
    pub min: Vec<i64>,
    /// Shape TensorRT optimizes for.
    pub opt: Vec<i64>,
    /// Largest shape accepted.
    pub max: Vec<i64>,
}

impl ShapeRange {
    /// A range from three shapes.
    pub fn new(min: &[i64], opt: &[i64], max: &[i64]) -> Self {
        ShapeRange { min: min.to_vec(), opt: opt.to_vec(), max: max.to_vec() }
    }

    /// One fixed shape.
    pub fn fixed(shape: &[i64]) -> Self {
        ShapeRange::new(shape, shape, shape)
    }

    /// Ranks agree and, per dimension, 0 <= min <= opt <= max (the reason otherwise).
    pub fn check_order(&self) -> std::result::Result<(), String> {
        let rank = self.min.len();
        if self.opt.len() != rank || self.max.len() != rank {
            return Err(format!("min {:?}, opt {:?} and max {:?} have different ranks", self.min, self.opt, self.max));
        }
        for i in 0..rank {
            let (lo, mid, hi) = (self.min[i], self.opt[i], self.max[i]);
            if lo < 0 {
                return Err(format!("dimension {i}: negative minimum {lo}"));
            }
            if !(lo <= mid && mid <= hi) {
                return Err(format!("dimension {i}: need min <= opt <= max, got {lo}, {mid}, {hi}"));
            }
        }
        Ok(())
    }

    /// Does `shape` lie within the range (same rank, min <= d <= max)?
    pub fn contains(&self, shape: &[i64]) -> bool {
        shape.len() == self.min.len() && shape.iter().zip(self.min.iter().zip(&self.max)).all(|(d, (lo, hi))| lo <= d && d <= hi)
    }

    /// Check the range against the input's declared dimensions.
    pub fn validate(&self, input: &TensorInfo) -> Result<()> {
        let bad = |reason: String| Err(Error::InvalidProfile { tensor: input.name.clone(), reason });
        let rank = input.dims.len();
        if self.min.len() != rank {
            return bad(format!("min shape {:?} has rank {}, the input has rank {rank} ({:?})", self.min, self.min.len(), input.dims));
        }
        if let Err(reason) = self.check_order() {
            return bad(reason);
        }
        for (i, &declared) in input.dims.iter().enumerate() {
            if declared >= 0 && (self.min[i] != declared || self.max[i] != declared) {
                return bad(format!(
                    "dimension {i} is fixed at {declared} in the network, but the range is {}..={}",
                    self.min[i], self.max[i]
                ));
            }
        }
        Ok(())
    }
}

/// One optimization profile: a range for each dynamic input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ProfileSpec {
    /// Input name to its range (ordered, so hashing is stable).
    pub ranges: BTreeMap<String, ShapeRange>,
}

impl ProfileSpec {
    /// An empty profile.
    pub fn new() -> Self {
        ProfileSpec::default()
    }

    /// Add (or replace) the range of one input.
    pub fn with(mut self, input: &str, range: ShapeRange) -> Self {
        self.ranges.insert(input.to_owned(), range);
        self
    }

    /// The same min/opt/max for several inputs (e.g. all `[batch, seq]` inputs of a BERT).
    pub fn with_all(mut self, inputs: &[&str], range: ShapeRange) -> Self {
        for i in inputs {
            self.ranges.insert((*i).to_owned(), range.clone());
        }
        self
    }

    /// Check against the network's inputs: every dynamic input covered, no
    /// unknown input, every range valid.
    pub fn validate(&self, inputs: &[TensorInfo]) -> Result<()> {
        for name in self.ranges.keys() {
            if !inputs.iter().any(|i| &i.name == name) {
                let known = inputs.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ");
                return Err(Error::InvalidProfile {
                    tensor: name.clone(),
                    reason: format!("the network has no such input (inputs: {known})"),
                });
            }
        }
        let missing: Vec<String> =
            inputs.iter().filter(|i| i.is_dynamic() && !self.ranges.contains_key(&i.name)).map(|i| i.name.clone()).collect();
        if !missing.is_empty() {
            return Err(Error::MissingProfile { inputs: missing });
        }
        for input in inputs {
            if let Some(r) = self.ranges.get(&input.name) {
                r.validate(input)?;
            }
        }
        Ok(())
    }
}

/// A TensorRT optimization profile, owned by its builder.
pub struct OptimizationProfile<'b> {
    raw: NonNull<ffi::IOptimizationProfile>,
    _builder: PhantomData<&'b crate::Builder>,
}

impl<'b> OptimizationProfile<'b> {
    pub(crate) fn new(raw: NonNull<ffi::IOptimizationProfile>) -> Self {
        OptimizationProfile { raw, _builder: PhantomData }
    }

    fn pin(&mut self) -> Pin<&mut ffi::IOptimizationProfile> {
        // SAFETY: owned by the builder, alive for 'b; &mut self is exclusive.
        unsafe { Pin::new_unchecked(self.raw.as_mut()) }
    }

    pub(crate) fn get(&self) -> &ffi::IOptimizationProfile {
        // SAFETY: as above.
        unsafe { self.raw.as_ref() }
    }

    /// Set the range of one input (not validated: use [`ProfileSpec`] for that).
    pub fn set(&mut self, input: &str, range: &ShapeRange) -> Result<()> {
        use ffi::OptProfileSelector as S;
        for (which, dims) in [(S::kMIN, &range.min), (S::kOPT, &range.opt), (S::kMAX, &range.max)] {
            call_bool("IOptimizationProfile::setDimensions", || ffi::profile_set_dims(self.pin(), input, which, dims))?;
        }
        Ok(())
    }

    /// The range of one input, if set.
    pub fn get_range(&self, input: &str) -> Result<Option<ShapeRange>> {
        use ffi::OptProfileSelector as S;
        let get = |w| call("IOptimizationProfile::getDimensions", || ffi::profile_get_dims(self.get(), input, w)).map(|r| r.0);
        let (min, opt, max) = (get(S::kMIN)?, get(S::kOPT)?, get(S::kMAX)?);
        Ok((!min.is_empty()).then_some(ShapeRange { min, opt, max }))
    }
}
