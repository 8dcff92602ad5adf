//! Owned tensors of any element type a backend takes ([`ElementType`]):
//! typed values in row-major order plus a shape, and what a server does with
//! them around a batch: read from and write to little-endian bytes (both
//! KServe binary encodings), stack along the batch axis, cut into rows.
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
}
