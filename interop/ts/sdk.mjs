// Loads @agentclientprotocol/sdk (and `ws`) from the project's interop cache
// (installed by `cargo xtask interop`), honouring the package's `exports` map.
//
// The cache's node directory is $ACP_INTEROP_NODE_DIR, or by default
// <workspace>/.cache/interop/node (this file lives in <workspace>/interop/ts/).

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const nodeDir =
  process.env.ACP_INTEROP_NODE_DIR ??
  resolve(here, "..", "..", ".cache", "interop", "node");

const require = createRequire(join(nodeDir, "package.json"));

/** Imports a subpath of the SDK ("" for the default v1 entrypoint). */
export async function importSdk(subpath = "") {
  const specifier = "@agentclientprotocol/sdk" + (subpath ? "/" + subpath : "");
  let file;
  try {
    file = require.resolve(specifier);
  } catch (error) {
    throw new Error(
      `cannot resolve ${specifier} from ${nodeDir} (run \`cargo xtask interop\` to install it): ${error.message}`,
    );
  }
  return import(pathToFileURL(file).href);
}

/** A CommonJS package of the cache, such as `ws` (for the network drivers). */
export function requirePackage(name) {
  try {
    return require(name);
  } catch (error) {
    throw new Error(
      `cannot load ${name} from ${nodeDir} (run \`cargo xtask interop\` to install it): ${error.message}`,
    );
  }
}

/** The installed SDK version, from its package.json. */
export function sdkVersion() {
  const file = join(nodeDir, "node_modules", "@agentclientprotocol", "sdk", "package.json");
  return JSON.parse(readFileSync(file, "utf8")).version;
}

/** Web streams over a child process's or our own stdio. */
export async function webStreams(writable, readable) {
  const { Readable, Writable } = await import("node:stream");
  return {
    output: Writable.toWeb(writable),
    input: Readable.toWeb(readable),
  };
}
