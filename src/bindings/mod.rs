//! Host bindings: conversion and error mapping over [`crate::AsyncMemory`],
//! no logic of their own. `js` is the wasm-bindgen surface of the npm
//! package (WebAssembly with the `js` feature).

pub mod js;
