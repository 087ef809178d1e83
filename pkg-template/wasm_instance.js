// One instance of edgelimit's WebAssembly module, made from a compiled `WebAssembly.Module` however the
// runtime delivers it. `new WebAssembly.Instance` checks what the module is, not which realm made it, so
// a module compiled in another realm (Next.js's edge sandbox compiles it in the host's) is taken as is.
// The glue is wasm-bindgen's `--target bundler` output, which leaves instantiation to whoever loads it.
import * as glue from "./edgelimit_bg.js";
import * as boundary from "./snippets/SNIPPETS/src/js/boundary.js";

/** What the module imports, by the module names it was compiled with. */
export const imports = {
  "./edgelimit_bg.js": glue,
  "./snippets/SNIPPETS/src/js/boundary.js": boundary,
};

/** The instance the package runs on, once started (its memory is what `make bench` reports). */
export let running;

/** Starts the glue on `instance`, an instance of the module made with `imports`. */
export function start(instance) {
  glue.__wbg_set_wasm(instance.exports);
  instance.exports.__wbindgen_start?.();
  running = instance;
}

/** Instantiates `module` (a `WebAssembly.Module` of any realm) synchronously and starts the glue. */
export function instantiate(module) {
  start(new WebAssembly.Instance(module, imports));
}
