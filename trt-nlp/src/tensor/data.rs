//! Owned tensors of any element type a backend takes ([`ElementType`]):
//! typed values in row-major order plus a shape, and what a server does with
//! them around a batch: read from and write to little-endian bytes (both
//! KServe binary encodings), stack along the batch axis, cut into rows, pad
//! ragged requests to one shape and cut the padding off again.
//!
//! Bools are stored one byte each (0 or 1), as TensorRT and ONNX Runtime
//! lay them out; a nonzero byte reads as true.

use half::{bf16, f16};

use crate::{ElementType, Error, Result};

/// The values of one tensor, row-major, of one element type.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TensorData {
    /// f32 values.
    F32(Vec<f32>),
    /// f16 values.
    F16(Vec<f16>),
    /// bf16 values.
    BF16(Vec<bf16>),
    /// i8 values.
    I8(Vec<i8>),
    /// u8 values.
    U8(Vec<u8>),
    /// i32 values.
    I32(Vec<i32>),
    /// i64 values.
    I64(Vec<i64>),
    /// bool values.
    Bool(Vec<bool>),
}

/// `$body` with `$v` bound to the vector of whichever variant `$d` is.
macro_rules! on_data {
    ($d:expr, $v:ident => $body:expr) => {
        match $d {
            TensorData::F32($v) => $body,
            TensorData::F16($v) => $body,
            TensorData::BF16($v) => $body,
            TensorData::I8($v) => $body,
            TensorData::U8($v) => $body,
            TensorData::I32($v) => $body,
            TensorData::I64($v) => $body,
            TensorData::Bool($v) => $body,
        }
    };
}

/// `$body` as the same variant, with `$v` bound to the vector of `$d` (the
/// body returns a vector of the same element type).
macro_rules! map_data {
    ($d:expr, $v:ident => $body:expr) => {
        match $d {
            TensorData::F32($v) => TensorData::F32($body),
            TensorData::F16($v) => TensorData::F16($body),
            TensorData::BF16($v) => TensorData::BF16($body),
            TensorData::I8($v) => TensorData::I8($body),
            TensorData::U8($v) => TensorData::U8($body),
            TensorData::I32($v) => TensorData::I32($body),
            TensorData::I64($v) => TensorData::I64($body),
            TensorData::Bool($v) => TensorData::Bool($body),
        }
    };
}

/// `$body` as the variant `$a` and `$b` share, with `$x` and `$y` bound to
/// their vectors; `None` when their element types differ.
macro_rules! zip_data {
    ($a:expr, $b:expr, $x:ident, $y:ident => $body:expr) => {
        match ($a, $b) {
            (TensorData::F32($x), TensorData::F32($y)) => Some(TensorData::F32($body)),
            (TensorData::F16($x), TensorData::F16($y)) => Some(TensorData::F16($body)),
            (TensorData::BF16($x), TensorData::BF16($y)) => Some(TensorData::BF16($body)),
            (TensorData::I8($x), TensorData::I8($y)) => Some(TensorData::I8($body)),
            (TensorData::U8($x), TensorData::U8($y)) => Some(TensorData::U8($body)),
            (TensorData::I32($x), TensorData::I32($y)) => Some(TensorData::I32($body)),
            (TensorData::I64($x), TensorData::I64($y)) => Some(TensorData::I64($body)),
            (TensorData::Bool($x), TensorData::Bool($y)) => Some(TensorData::Bool($body)),
            _ => None,
        }
    };
}

/// `src` (row-major, shape `from`) placed at the same indices in a tensor of
/// shape `to` (`count` values, no dimension smaller), the rest `fill`.
fn pad_values<T: Copy>(src: &[T], from: &[usize], to: &[usize], count: usize, fill: T) -> Vec<T> {
    let mut out = vec![fill; count];
    let Some((&inner, outer)) = from.split_last() else { return src.to_vec() };
    if inner == 0 {
        return out;
    }
    // `to`'s strides for every axis but the last (whose runs are copied whole).
    let mut strides = vec![0; outer.len()];
    let mut stride = to[outer.len()];
    for d in (0..outer.len()).rev() {
        strides[d] = stride;
        stride *= to[d];
    }
    for (run, chunk) in src.chunks_exact(inner).enumerate() {
        let (mut rest, mut at) = (run, 0);
        for d in (0..outer.len()).rev() {
            at += (rest % outer[d]) * strides[d];
            rest /= outer[d];
        }
        out[at..at + inner].copy_from_slice(chunk);
    }
    out
}

/// Element conversion to and from little-endian bytes.
trait Le: Copy {
    const SIZE: usize;
    fn read(b: &[u8]) -> Self;
    fn write(self, out: &mut Vec<u8>);
}

macro_rules! le {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn read(b: &[u8]) -> Self {
                <$t>::from_le_bytes(b.try_into().expect("chunk of the element's size"))
            }
            fn write(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
        }
    )*};
}
le!(f32, f16, bf16, i8, u8, i32, i64);

impl Le for bool {
    const SIZE: usize = 1;
    fn read(b: &[u8]) -> Self {
        b[0] != 0
    }
    fn write(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
}

fn from_le<T: Le>(raw: &[u8]) -> Vec<T> {
    raw.chunks_exact(T::SIZE).map(T::read).collect()
}

fn to_le<T: Le>(values: &[T], out: &mut Vec<u8>) {
    out.reserve(values.len() * T::SIZE);
    for &v in values {
        v.write(out);
    }
}

impl TensorData {
    /// `count` zeros (false for bools) of `element`.
    pub fn zeros(element: ElementType, count: usize) -> Self {
        match element {
            ElementType::F32 => TensorData::F32(vec![0.0; count]),
            ElementType::F16 => TensorData::F16(vec![f16::ZERO; count]),
            ElementType::BF16 => TensorData::BF16(vec![bf16::ZERO; count]),
            ElementType::I8 => TensorData::I8(vec![0; count]),
            ElementType::U8 => TensorData::U8(vec![0; count]),
            ElementType::I32 => TensorData::I32(vec![0; count]),
            ElementType::I64 => TensorData::I64(vec![0; count]),
            ElementType::Bool => TensorData::Bool(vec![false; count]),
        }
    }

    /// One value of `element` written as text (`0`, `-1`, `0.5`, `true`),
    /// or `None` when `text` does not read as one.
    pub fn parse_one(element: ElementType, text: &str) -> Option<Self> {
        let t = text.trim();
        Some(match element {
            ElementType::F32 => TensorData::F32(vec![t.parse().ok()?]),
            ElementType::F16 => TensorData::F16(vec![f16::from_f32(t.parse().ok()?)]),
            ElementType::BF16 => TensorData::BF16(vec![bf16::from_f32(t.parse().ok()?)]),
            ElementType::I8 => TensorData::I8(vec![t.parse().ok()?]),
            ElementType::U8 => TensorData::U8(vec![t.parse().ok()?]),
            ElementType::I32 => TensorData::I32(vec![t.parse().ok()?]),
            ElementType::I64 => TensorData::I64(vec![t.parse().ok()?]),
            ElementType::Bool => TensorData::Bool(vec![match t {
                "true" | "1" => true,
                "false" | "0" => false,
                _ => return None,
            }]),
        })
    }

    /// Values of `element` read from little-endian bytes; `raw` must hold a
    /// whole number of elements (`tensor` names it in the error).
    pub fn from_le_bytes(tensor: &str, element: ElementType, raw: &[u8]) -> Result<Self> {
        let size = element.bits() / 8;
        if !raw.len().is_multiple_of(size) {
            return Err(Error::Tensor {
                tensor: tensor.to_owned(),
                problem: format!("{} bytes are not a whole number of {element:?} elements ({size} bytes each)", raw.len()),
            });
        }
        Ok(match element {
            ElementType::F32 => TensorData::F32(from_le(raw)),
            ElementType::F16 => TensorData::F16(from_le(raw)),
            ElementType::BF16 => TensorData::BF16(from_le(raw)),
            ElementType::I8 => TensorData::I8(from_le(raw)),
            ElementType::U8 => TensorData::U8(raw.to_vec()),
            ElementType::I32 => TensorData::I32(from_le(raw)),
            ElementType::I64 => TensorData::I64(from_le(raw)),
            ElementType::Bool => TensorData::Bool(from_le(raw)),
        })
    }

    /// The values as little-endian bytes (bools one byte each).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        on_data!(self, v => to_le(v, &mut out));
        out
    }

    /// The element type.
    pub fn element(&self) -> ElementType {
        match self {
            TensorData::F32(_) => ElementType::F32,
            TensorData::F16(_) => ElementType::F16,
            TensorData::BF16(_) => ElementType::BF16,
            TensorData::I8(_) => ElementType::I8,
            TensorData::U8(_) => ElementType::U8,
            TensorData::I32(_) => ElementType::I32,
            TensorData::I64(_) => ElementType::I64,
            TensorData::Bool(_) => ElementType::Bool,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        on_data!(self, v => v.len())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values `range` (element indices), copied.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Self {
        map_data!(self, v => v[range].to_vec())
    }

    /// Every part's values back to back; all parts must have this one's type.
    fn extend(&mut self, part: &TensorData) -> bool {
        match (self, part) {
            (TensorData::F32(a), TensorData::F32(b)) => a.extend_from_slice(b),
            (TensorData::F16(a), TensorData::F16(b)) => a.extend_from_slice(b),
            (TensorData::BF16(a), TensorData::BF16(b)) => a.extend_from_slice(b),
            (TensorData::I8(a), TensorData::I8(b)) => a.extend_from_slice(b),
            (TensorData::U8(a), TensorData::U8(b)) => a.extend_from_slice(b),
            (TensorData::I32(a), TensorData::I32(b)) => a.extend_from_slice(b),
            (TensorData::I64(a), TensorData::I64(b)) => a.extend_from_slice(b),
            (TensorData::Bool(a), TensorData::Bool(b)) => a.extend_from_slice(b),
            _ => return false,
        }
        true
    }
}

/// One tensor: a shape and as many values as it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    shape: Vec<usize>,
    data: TensorData,
}

impl Tensor {
    /// `data` as a tensor of `shape`; the counts must agree (`name` is for the error).
    pub fn new(name: &str, shape: Vec<usize>, data: TensorData) -> Result<Self> {
        let count = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if count != Some(data.len()) {
            return Err(Error::Tensor { tensor: name.to_owned(), problem: format!("{} values do not fill shape {shape:?}", data.len()) });
        }
        Ok(Tensor { shape, data })
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The values.
    pub fn data(&self) -> &TensorData {
        &self.data
    }

    /// The values, owned.
    pub fn into_data(self) -> TensorData {
        self.data
    }

    /// The element type.
    pub fn element(&self) -> ElementType {
        self.data.element()
    }

    /// Stacks `parts` along axis 0: every part has the same element type and
    /// the same dimensions after the first (`name` is for the error).
    pub fn concat(name: &str, parts: &[&Tensor]) -> Result<Tensor> {
        let Some(first) = parts.first() else {
            return Err(Error::Tensor { tensor: name.to_owned(), problem: "nothing to stack".into() });
        };
        if first.shape.is_empty() {
            return Err(Error::Tensor { tensor: name.to_owned(), problem: "a scalar has no batch axis".into() });
        }
        let mut rows = 0;
        let mut data = TensorData::zeros(first.element(), 0);
        for p in parts {
            if p.shape.len() != first.shape.len() || p.shape[1..] != first.shape[1..] {
                return Err(Error::Tensor {
                    tensor: name.to_owned(),
                    problem: format!("shape {:?} cannot stack with {:?}", p.shape, first.shape),
                });
            }
            if !data.extend(&p.data) {
                return Err(Error::Tensor {
                    tensor: name.to_owned(),
                    problem: format!("{:?} values cannot stack with {:?}", p.element(), first.element()),
                });
            }
            rows += p.shape[0];
        }
        let mut shape = first.shape.clone();
        shape[0] = rows;
        Ok(Tensor { shape, data })
    }

    /// Rows `start..start + count` along axis 0, copied.
    pub fn rows(&self, name: &str, start: usize, count: usize) -> Result<Tensor> {
        let Some(&total) = self.shape.first() else {
            return Err(Error::Tensor { tensor: name.to_owned(), problem: "a scalar has no rows".into() });
        };
        if start.checked_add(count).is_none_or(|end| end > total) {
            return Err(Error::Tensor {
                tensor: name.to_owned(),
                problem: format!("rows {start}..{} of a tensor of {total} rows", start.saturating_add(count)),
            });
        }
        let row: usize = self.shape[1..].iter().product();
        let mut shape = self.shape.clone();
        shape[0] = count;
        Ok(Tensor { shape, data: self.data.slice(start * row..(start + count) * row) })
    }
}

impl Tensor {
    /// This tensor grown to `shape` (the same rank, no dimension smaller):
    /// every value keeps its indices, the new places hold `fill` (one value
    /// of this element type). `name` is for the error.
    pub fn padded(&self, name: &str, shape: &[usize], fill: &TensorData) -> Result<Tensor> {
        let bad = |problem: String| Error::Tensor { tensor: name.to_owned(), problem };
        if shape.len() != self.shape.len() || shape.iter().zip(&self.shape).any(|(to, from)| to < from) {
            return Err(bad(format!("shape {:?} cannot be padded to {shape:?}", self.shape)));
        }
        let not_one = || bad(format!("the pad value {fill:?} is not one {:?} value", self.element()));
        if fill.len() != 1 {
            return Err(not_one());
        }
        if shape == self.shape.as_slice() {
            return Ok(self.clone());
        }
        let count = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).ok_or_else(|| bad(format!("shape {shape:?} is too large")))?;
        let data = zip_data!(&self.data, fill, v, f => pad_values(v, &self.shape, shape, count, f[0])).ok_or_else(not_one)?;
        Ok(Tensor { shape: shape.to_vec(), data })
    }

    /// The first `len` places along `axis`, copied (`name` is for the error).
    pub fn narrowed(&self, name: &str, axis: usize, len: usize) -> Result<Tensor> {
        let bad = |problem: String| Error::Tensor { tensor: name.to_owned(), problem };
        let Some(&have) = self.shape.get(axis) else {
            return Err(bad(format!("axis {axis} of a tensor of shape {:?}", self.shape)));
        };
        if len > have {
            return Err(bad(format!("{len} places along axis {axis} of a tensor of shape {:?}", self.shape)));
        }
        if len == have {
            return Ok(self.clone());
        }
        let inner: usize = self.shape[axis + 1..].iter().product();
        let outer: usize = self.shape[..axis].iter().product();
        let (from, to) = (have * inner, len * inner);
        let data = map_data!(&self.data, v => (0..outer).flat_map(|o| v[o * from..o * from + to].iter().copied()).collect());
        let mut shape = self.shape.clone();
        shape[axis] = len;
        Ok(Tensor { shape, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn little_endian_bytes_round_trip_for_every_type() {
        for element in [
            ElementType::F32,
            ElementType::F16,
            ElementType::BF16,
            ElementType::I8,
            ElementType::U8,
            ElementType::I32,
            ElementType::I64,
            ElementType::Bool,
        ] {
            let size = element.bits() / 8;
            let raw: Vec<u8> = (0..3 * size).map(|i| if element == ElementType::Bool { (i % 2) as u8 } else { i as u8 }).collect();
            let d = TensorData::from_le_bytes("x", element, &raw).unwrap();
            assert_eq!((d.element(), d.len()), (element, 3));
            assert_eq!(d.to_le_bytes(), raw, "{element:?}");
        }
        let d =
            TensorData::from_le_bytes("x", ElementType::I64, &[1, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255]).unwrap();
        assert_eq!(d, TensorData::I64(vec![1, -1]));
        let e = TensorData::from_le_bytes("ids", ElementType::I64, &[0; 7]).unwrap_err().to_string();
        assert!(e.contains("'ids'") && e.contains("7 bytes"), "{e}");
    }

    #[test]
    fn tensors_stack_along_the_batch_axis_and_cut_back_into_rows() {
        let a = Tensor::new("x", vec![1, 3], TensorData::I64(vec![1, 2, 3])).unwrap();
        let b = Tensor::new("x", vec![2, 3], TensorData::I64(vec![4, 5, 6, 7, 8, 9])).unwrap();
        let both = Tensor::concat("x", &[&a, &b]).unwrap();
        assert_eq!(both.shape(), [3, 3]);
        assert_eq!(both.rows("x", 0, 1).unwrap(), a);
        assert_eq!(both.rows("x", 1, 2).unwrap(), b);
        assert!(both.rows("x", 2, 2).unwrap_err().to_string().contains("rows 2..4 of a tensor of 3 rows"));
        let c = Tensor::new("x", vec![1, 2], TensorData::I64(vec![1, 2])).unwrap();
        assert!(Tensor::concat("x", &[&a, &c]).unwrap_err().to_string().contains("cannot stack"));
        let d = Tensor::new("x", vec![1, 3], TensorData::I32(vec![1, 2, 3])).unwrap();
        assert!(Tensor::concat("x", &[&a, &d]).unwrap_err().to_string().contains("I32"));
        assert!(Tensor::new("x", vec![2, 2], TensorData::F32(vec![0.0; 3])).unwrap_err().to_string().contains("do not fill"));
    }

    #[test]
    fn ragged_tensors_pad_to_one_shape_and_narrow_back() {
        // [1, 2, 3] padded to [1, 3, 4] with -1: each row of 3 keeps its place.
        let a = Tensor::new("x", vec![1, 2, 3], TensorData::I64((1..=6).collect())).unwrap();
        let fill = TensorData::parse_one(ElementType::I64, " -1 ").unwrap();
        let p = a.padded("x", &[1, 3, 4], &fill).unwrap();
        assert_eq!(p.shape(), [1, 3, 4]);
        assert_eq!(p.data(), &TensorData::I64(vec![1, 2, 3, -1, 4, 5, 6, -1, -1, -1, -1, -1]));
        assert_eq!(p.narrowed("x", 1, 2).unwrap().narrowed("x", 2, 3).unwrap(), a);
        assert_eq!(a.padded("x", &[1, 2, 3], &fill).unwrap(), a, "the same shape is no padding");
        let e = a.padded("x", &[1, 1, 3], &fill).unwrap_err().to_string();
        assert!(e.contains("cannot be padded to [1, 1, 3]"), "{e}");
        let e = a.padded("x", &[1, 2, 4], &TensorData::F32(vec![0.0])).unwrap_err().to_string();
        assert!(e.contains("is not one I64 value"), "{e}");
        assert!(a.narrowed("x", 3, 1).unwrap_err().to_string().contains("axis 3"));
        assert!(a.narrowed("x", 1, 3).unwrap_err().to_string().contains("3 places along axis 1"));
        // Every element type reads its pad value; text that is not one is refused.
        let f = TensorData::parse_one(ElementType::F16, "0.5").unwrap();
        assert_eq!(f, TensorData::F16(vec![f16::from_f32(0.5)]));
        assert_eq!(TensorData::parse_one(ElementType::Bool, "true"), Some(TensorData::Bool(vec![true])));
        assert_eq!(TensorData::parse_one(ElementType::U8, "-1"), None);
        assert_eq!(TensorData::parse_one(ElementType::I32, "zero"), None);
        let b = Tensor::new("m", vec![2, 1], TensorData::Bool(vec![true, true])).unwrap();
        let pb = b.padded("m", &[2, 3], &TensorData::parse_one(ElementType::Bool, "0").unwrap()).unwrap();
        assert_eq!(pb.data(), &TensorData::Bool(vec![true, false, false, true, false, false]));
    }
}
