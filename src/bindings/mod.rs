//! Host bindings: conversion and error mapping over [`crate::AsyncMemory`],
//! no logic of their own. `js` is the wasm-bindgen surface of the npm
//! package (`wasm32-unknown-unknown` with the `js` feature); `wit` is the
//! WebAssembly component of `wit/` (`wasm32-wasip2` with the `wit` feature).

#[cfg(all(target_arch = "wasm32", target_os = "unknown", feature = "js"))]
pub mod js;
#[cfg(all(target_arch = "wasm32", target_os = "wasi", feature = "wit"))]
pub mod wit;
