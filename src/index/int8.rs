//! Int8 vectors: the form every embedding takes in memory and in its
//! record (`docs/format.md`, section 2.1), owned ([`Int8Vector`]) or
//! borrowed from a vector index's row ([`Int8Ref`]).

/// Largest int8 code magnitude.
const CODE_MAX: f32 = 127.0;

/// `y` rounded to the nearest integer, halves away from zero: what
/// `f32::round` gives, for `|y| < 2³¹`. `f32::round` is a call into libm
/// in WebAssembly, which has no such instruction, and natively without
/// SSE4.1; this is a truncating conversion and two compares, for each
/// component of every embedding ingested (`docs/speed.md`, "Seventeenth
/// session").
pub(crate) fn round_half_away(y: f32) -> i32 {
    // Exact: `whole` and `y` are within one of each other, and both
    // are below 2²⁴ in magnitude whenever `y` has a fraction.
    let whole = y as i32;
    let fraction = y - whole as f32;
    if fraction >= 0.5 {
        whole + 1
    } else if fraction <= -0.5 {
        whole - 1
    } else {
        whole
    }
}

/// The largest magnitude of `vector`'s components, 0 for none; a NaN is
/// passed over, as `f32::max` passes it over. By compares: `f32::max` is a
/// call into libm in WebAssembly (its NaN rule is not the instruction's).
pub(crate) fn max_abs(vector: &[f32]) -> f32 {
    vector.iter().fold(0.0f32, |max, x| {
        let x = x.abs();
        if x > max {
            x
        } else {
            max
        }
    })
}

/// A vector stored as int8 codes with one scale (symmetric, no zero
/// point): component `i` is about `codes[i] · scale`, off by at most
/// `scale / 2`. Every memory's own embedding is held this way and
/// persisted so (a quarter of the bytes of `f32`); a vector index's row
/// holds its codes and scale as they are.
#[derive(Debug, Clone, PartialEq)]
pub struct Int8Vector {
    scale: f32,
    codes: Box<[i8]>,
}

impl Int8Vector {
    /// Quantizes finite components: the largest magnitude `m` becomes ±127
    /// and `scale = m / 127`. An all-zero vector gets scale 0.
    pub fn quantize(vector: &[f32]) -> Int8Vector {
        let max_abs = max_abs(vector);
        if max_abs == 0.0 || !max_abs.is_finite() {
            return Int8Vector {
                scale: 0.0,
                codes: vec![0; vector.len()].into(),
            };
        }
        let codes = vector
            .iter()
            // In [-127, 127], so the cast never saturates.
            .map(|&x| round_half_away(x / max_abs * CODE_MAX) as i8)
            .collect();
        Int8Vector {
            scale: max_abs / CODE_MAX,
            codes,
        }
    }

    /// A vector from stored parts; `None` unless the scale is finite and
    /// not negative.
    pub fn from_parts(codes: Box<[i8]>, scale: f32) -> Option<Int8Vector> {
        (scale.is_finite() && scale >= 0.0).then_some(Int8Vector { scale, codes })
    }

    /// The codes.
    pub fn codes(&self) -> &[i8] {
        &self.codes
    }

    /// The scale: a component is its code times this.
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// Number of components.
    pub fn len(&self) -> usize {
        self.codes.len()
    }

#[cfg(any(test, feature = "testing"))]
    /// Whether the vector has no component.
    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// The vector borrowed.
    pub fn view(&self) -> Int8Ref<'_> {
        Int8Ref {
            codes: &self.codes,
            scale: self.scale,
        }
    }

    #[cfg(any(test, feature = "testing"))]
    /// The components as `f32` (codes times the scale).
    pub fn to_f32(&self) -> Vec<f32> {
        self.view().to_f32()
    }

    #[cfg(any(test, feature = "testing"))]
    /// The dot product with `other` (0 for a length mismatch).
    pub fn dot(&self, other: &[f32]) -> f32 {
        self.view().dot(other)
    }
}

/// An int8 vector borrowed: an [`Int8Vector`], or a row of a
/// [`VectorIndex`], which holds each memory's embedding once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Int8Ref<'a> {
    codes: &'a [i8],
    scale: f32,
}

impl<'a> From<&'a Int8Vector> for Int8Ref<'a> {
    fn from(vector: &'a Int8Vector) -> Self {
        vector.view()
    }
}

impl<'a> Int8Ref<'a> {
    /// Borrows `codes` with their `scale`.
    pub(super) fn new(codes: &'a [i8], scale: f32) -> Self {
        Int8Ref { codes, scale }
    }

    /// The codes.
    pub fn codes(self) -> &'a [i8] {
        self.codes
    }

    /// The scale: a component is its code times this.
    pub fn scale(self) -> f32 {
        self.scale
    }

    /// Number of components.
    pub fn len(self) -> usize {
        self.codes.len()
    }

    #[cfg(any(test, feature = "testing"))]
    /// Whether the vector has no component.
    pub fn is_empty(self) -> bool {
        self.codes.is_empty()
    }

    /// The components as `f32` (codes times the scale).
    pub fn to_f32(self) -> Vec<f32> {
        self.codes
            .iter()
            .map(|&code| f32::from(code) * self.scale)
            .collect()
    }

    /// The dot product with `other` (0 for a length mismatch).
    pub fn dot(self, other: &[f32]) -> f32 {
        if other.len() != self.codes.len() {
            return 0.0;
        }
        let sum: f32 = self
            .codes
            .iter()
            .zip(other)
            .map(|(&code, x)| f32::from(code) * x)
            .sum();
        sum * self.scale
    }

    /// An owned copy.
    pub fn to_vector(self) -> Int8Vector {
        Int8Vector {
            scale: self.scale,
            codes: self.codes.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtide_testkit::rng::Rng;

    #[test]
    fn rounding_halves_away_is_f32_round() {
        let mut rng = Rng(7);
        let halves = (-300..=300).map(|i| i as f32 * 0.5);
        let near_halves = (-300..=300).flat_map(|i| {
            let half = i as f32 * 0.5;
            [half.next_down(), half.next_up()]
        });
        let random = (0..100_000).map(|_| rng.signed() * 32_767.0);
        let extremes = [0.0, -0.0, 127.0, -127.0, 32_767.0, -32_767.0, 8_388_607.5, 1e9, -1e9];
        for y in halves.chain(near_halves).chain(random).chain(extremes) {
            assert_eq!(round_half_away(y), y.round() as i32, "{y}");
        }
    }

    #[test]
    fn the_largest_magnitude_is_f32_max_s() {
        let mut rng = Rng(11);
        let mut vectors: Vec<Vec<f32>> = (0..100).map(|_| rng.gaussian_vector(384)).collect();
        vectors.push(vec![]);
        vectors.push(vec![-0.0, 0.0]);
        vectors.push(vec![1.0, f32::NAN, -3.0]);
        vectors.push(vec![f32::NAN, f32::NAN]);
        vectors.push(vec![2.0, f32::NEG_INFINITY]);
        for vector in &vectors {
            let folded = vector.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            assert_eq!(max_abs(vector).to_bits(), folded.to_bits(), "{vector:?}");
        }
    }

    #[test]
    fn int8_vectors_round_trip_within_half_a_step() {
        let mut rng = Rng(5);
        let vector = rng.gaussian_vector(384);
        let quantized = Int8Vector::quantize(&vector);
        let max_abs = vector.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        assert_eq!(quantized.scale(), max_abs / 127.0);
        assert!(quantized.codes().iter().any(|&c| c.abs() == 127));
        for (x, y) in vector.iter().zip(quantized.to_f32()) {
            assert!(
                (x - y).abs() <= quantized.scale() / 2.0 + 1e-6,
                "{x} vs {y}"
            );
        }
        let other = rng.gaussian_vector(384);
        let exact: f32 = quantized
            .to_f32()
            .iter()
            .zip(&other)
            .map(|(a, b)| a * b)
            .sum();
        assert!((quantized.dot(&other) - exact).abs() < 1e-3);
        assert_eq!(quantized.dot(&other[..10]), 0.0);
        // Quantizing the dequantized vector gives the same codes back.
        assert_eq!(Int8Vector::quantize(&quantized.to_f32()), quantized);
        let zero = Int8Vector::quantize(&[0.0; 4]);
        assert_eq!((zero.scale(), zero.codes()), (0.0, &[0i8; 4][..]));
        assert!(Int8Vector::from_parts(vec![1].into(), f32::NAN).is_none());
        assert!(Int8Vector::from_parts(vec![1].into(), -1.0).is_none());
        assert_eq!(
            Int8Vector::from_parts(vec![1, -2].into(), 0.5)
                .unwrap()
                .to_f32(),
            [0.5, -1.0]
        );
    }
}
