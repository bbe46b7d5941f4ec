import { loadWasmBls, type WasmG1, type WasmG2 } from "./bls-wasm.js";
import { WASM_IBE, wasmIbeWithMultiples, type IbeCurve } from "./ibe.js";

/**
 * The curve the server encrypts with: the pairing in WebAssembly and the scalar multiples natively
 * with blst, or wholly in WebAssembly where blst's prebuilt binary does not load. Both are held to
 * noble by test/crypto/fast-paths.test.ts.
 */
export async function loadEncryptionCurve(): Promise<IbeCurve<WasmG1, WasmG2>> {
  await loadWasmBls();
  try {
    const { NATIVE_MULTIPLES } = await import("./decryption-share-native.js");
    return wasmIbeWithMultiples(NATIVE_MULTIPLES);
  } catch {
    return WASM_IBE;
  }
}
