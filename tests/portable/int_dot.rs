//! The exact integer dot products of `crates/int-dot` against naive sums,
//! in every build: they are portable loops natively and 128-bit SIMD in
//! WebAssembly, so these tests also run inside headless Chromium
//! (`scripts/test-browser.sh`). Lengths go around the SIMD groups and blocks
//! and across the `i64` widening points; extreme values check that no
//! accumulator can overflow.

#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use memtide_int_dot::{dot_i16_i8, dot_i8_i8, dot_tile, I16Vectors, I8Vectors};

use memtide_testkit::rng::Rng;

fn naive<A: Copy + Into<i64>>(a: &[A], b: &[i8]) -> i64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| x.into() * i64::from(y))
        .sum()
}

const LENGTHS: [usize; 20] = [
    0, 1, 7, 8, 15, 16, 17, 31, 32, 33, 384, 1023, 1024, 1025, 1536, 2048, 4095, 4096, 4097, 9000,
];

/// The vector kernels on `wide`, `a` and `b` (of one length) against the
/// naive sums.
fn check_vector_kernels(wide: &[i16], a: &[i8], b: &[i8]) {
    let len = a.len();
    assert_eq!(dot_i8_i8(a, b), naive(a, b), "len {len}");
    assert_eq!(dot_i16_i8(wide, a), naive(wide, a), "len {len}");
}

#[test]
fn vector_kernels_match_the_naive_sums() {
    let mut rng = Rng(5);
    for len in LENGTHS {
        let a: Vec<i8> = (0..len).map(|_| rng.next_u64() as i8).collect();
        let b: Vec<i8> = (0..len).map(|_| rng.next_u64() as i8).collect();
        let wide: Vec<i16> = (0..len).map(|_| rng.next_u64() as i16).collect();
        check_vector_kernels(&wide, &a, &b);
        for (w, x, y) in [(i16::MAX, 127, -127), (i16::MIN, i8::MIN, i8::MIN)] {
            check_vector_kernels(&vec![w; len], &vec![x; len], &vec![y; len]);
        }
    }
}

/// Every tile shape the matrix product uses, on 4 `i16` vectors and 2 `i8`
/// vectors of `len` components laid one after the other.
fn check_tiles(wide: &[i16], narrow: &[i8], len: usize) {
    let rows = I16Vectors::new(wide, len);
    let columns = I8Vectors::new(narrow, len);
    let want: Vec<Vec<i64>> = wide
        .chunks(len.max(1))
        .map(|row| {
            narrow
                .chunks(len.max(1))
                .map(|column| naive(row, column))
                .collect()
        })
        .collect();
    macro_rules! check {
        ($r:literal, $c:literal) => {
            let sums = dot_tile::<$r, $c>(
                std::array::from_fn(|i| rows.get(i)),
                std::array::from_fn(|j| columns.get(j)),
            );
            for (i, row_sums) in sums.iter().enumerate() {
                assert_eq!(
                    row_sums[..],
                    want[i][..$c],
                    "{}×{} len {len} row {i}",
                    $r,
                    $c
                );
            }
        };
    }
    check!(1, 1);
    check!(1, 2);
    check!(2, 1);
    check!(2, 2);
    check!(3, 1);
    check!(3, 2);
    check!(4, 1);
    check!(4, 2);
}

#[test]
fn tiles_of_every_shape_match_the_naive_sums() {
    let mut rng = Rng(8);
    for len in LENGTHS.into_iter().filter(|&len| len > 0) {
        let wide: Vec<i16> = (0..4 * len).map(|_| rng.next_u64() as i16).collect();
        let narrow: Vec<i8> = (0..2 * len).map(|_| rng.next_u64() as i8).collect();
        check_tiles(&wide, &narrow, len);
        for (w, x) in [(i16::MAX, -127), (i16::MIN, i8::MIN)] {
            check_tiles(&vec![w; 4 * len], &vec![x; 2 * len], len);
        }
    }
}

#[test]
fn a_tile_stops_at_its_shortest_vector() {
    let rows = I16Vectors::new(&[1; 40], 40);
    let short = I8Vectors::new(&[2; 20], 20);
    let long = I8Vectors::new(&[3; 40], 40);
    // 20 components are two blocks of 16: the short vector's padding is
    // zeros, and the long one is cut after its second block.
    assert_eq!(
        dot_tile([rows.get(0)], [short.get(0), long.get(0)]),
        [[40, 96]]
    );
}
