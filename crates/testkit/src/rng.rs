//! SplitMix64, a small seeded generator: tests see the same data on every
//! run and in every runtime.

/// A SplitMix64 state.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in (-1, 1].
    pub fn signed(&mut self) -> f32 {
        (2.0 * self.uniform() - 1.0) as f32
    }

    /// Standard normal (Box–Muller).
    pub fn gaussian(&mut self) -> f32 {
        let (u, v) = (self.uniform(), self.uniform());
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }

    /// `dimensions` standard normals.
    pub fn gaussian_vector(&mut self, dimensions: usize) -> Vec<f32> {
        (0..dimensions).map(|_| self.gaussian()).collect()
    }
}
