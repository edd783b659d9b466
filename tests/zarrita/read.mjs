// read.mjs: a Zarr store read by zarrita, a reader independent of
// zarr-python, printed as JSON lines for tests/py/test_zarrita.py.
//
//   node read.mjs STORE VERSION [NAME...]
//
// STORE is a folder (a mount's __zarr), VERSION 2 or 3.  The store is
// opened through its consolidated metadata (v2 .zmetadata, v3 the root
// zarr.json's consolidated_metadata), as zarr.open_consolidated and
// xarray do.  The first line describes the root group:
//   {"group": "/", "attrs": {...}, "contents": [{"path": "/a", "kind": "array"}, ...]}
// then one line {"group": PATH, "attrs": {...}} per group below it, then
// one line per array (every array of the consolidated metadata, or
// the NAMEs given), in the order of the contents:
//   {"name": "a", "dtype": "int32", "shape": [...], "chunks": [...],
//    "dimension_names": [...], "attrs": {...}, "fill_value": ...,
//    "plain": {the same keys, from the array's own documents},
//    "values_as": "number"|"bigint"|"bool"|"hex"|"string",
//    "values": [every cell, in C order]}
// "plain" is the array opened again without the consolidated metadata (its
// .zarray and .zattrs, or its zarr.json), so that the documents in its
// folder are read too.  Values: numbers (NaN, Infinity, -Infinity and -0
// as strings, JSON having no such numbers), 64-bit integers as decimal
// strings, booleans, fixed-size byte strings (v2 |SN) and byte values as
// hex, strings as they are.  An array zarrita cannot open or read is one
// line {"name": ..., "error": "ErrorClass: message (cause: ...)"}; the
// program goes on with the next.  Exit status 1 (and a message on stderr)
// only when the store itself cannot be opened or the arguments are wrong.
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";

/** "Class: message", with the chain of causes, of an error. */
function describe(err) {
    let parts = [];
    for (let e = err; e; e = e.cause) {
        parts.push(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
        if (!(e instanceof Error)) break;
    }
    return parts.join(" (cause: ") + ")".repeat(parts.length - 1);
}

/** A scalar as JSON can hold it (see the values above). */
function scalar(v) {
    if (typeof v === "bigint") return v.toString();
    if (typeof v === "number") {
        if (Number.isNaN(v)) return "NaN";
        if (v === Infinity) return "Infinity";
        if (v === -Infinity) return "-Infinity";
        if (Object.is(v, -0)) return "-0";
        return v;
    }
    if (v instanceof Uint8Array) return Buffer.from(v).toString("hex");
    return v;
}

/** The metadata of an opened array that the tests compare. */
function meta(arr) {
    return {
        dtype: arr.dtype,
        shape: arr.shape,
        chunks: arr.chunks,
        dimension_names: arr.dimensionNames ?? null,
        attrs: arr.attrs,
        fill_value: scalar(arr.fillValue),
    };
}

/** How the values of a chunk's data (zarrita's typed array) are printed,
 * and a function from an index into the data to that printed value. */
function reader(data) {
    if (data instanceof zarr.ByteStringArray) {
        // get() would decode the bytes as UTF-8 and drop every zero byte:
        // the raw bytes are what the tests compare.
        let bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
        let n = data.chars;
        return ["hex", (i) => Buffer.from(bytes.subarray(i * n, (i + 1) * n)).toString("hex")];
    }
    if (data instanceof zarr.BoolArray) return ["bool", (i) => data.get(i)];
    if (data instanceof zarr.UnicodeStringArray) return ["string", (i) => data.get(i)];
    if (data instanceof BigInt64Array || data instanceof BigUint64Array) {
        return ["bigint", (i) => data[i].toString()];
    }
    if (Array.isArray(data)) {
        // an object array (v2 |O, v3 string): what its codec made
        let kinds = new Set(data.map((v) => (v instanceof Uint8Array ? "hex" : typeof v)));
        if (kinds.size > 1) throw new Error(`object array of mixed values: ${[...kinds]}`);
        let kind = kinds.size ? [...kinds][0] : "string";
        if (kind !== "hex" && kind !== "string") throw new Error(`object array of ${kind} values`);
        return [kind, (i) => scalar(data[i])];
    }
    return ["number", (i) => scalar(data[i])];
}

/** Every value of a zarr.get result ({data, shape, stride}) in C order,
 * whatever its strides (an order F array keeps order F). */
function valuesC({ data, shape, stride }) {
    let [kind, at] = reader(data);
    let size = shape.reduce((a, b) => a * b, 1);
    let out = new Array(size);
    let index = new Array(shape.length).fill(0);
    for (let n = 0; n < size; n++) {
        let flat = 0;
        for (let d = 0; d < shape.length; d++) flat += index[d] * stride[d];
        out[n] = at(flat);
        for (let d = shape.length - 1; d >= 0; d--) {
            if (++index[d] < shape[d]) break;
            index[d] = 0;
        }
    }
    return [kind, out];
}

async function main(argv) {
    if (argv.length < 2 || (argv[1] !== "2" && argv[1] !== "3")) {
        throw new Error("usage: node read.mjs STORE 2|3 [NAME...]");
    }
    let [root, version, ...names] = argv;
    let fsStore = new FileSystemStore(root);
    let format = version === "2" ? "v2" : "v3";
    let open = version === "2" ? zarr.open.v2 : zarr.open.v3;
    let store = await zarr.withConsolidatedMetadata(fsStore, { format });
    let group = await open(store, { kind: "group" });
    let contents = store.contents().sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    console.log(JSON.stringify({ group: group.path, attrs: group.attrs, contents }));
    for (let { path } of contents.filter((c) => c.kind === "group" && c.path !== "/")) {
        let line = { group: path };
        try {
            line.attrs = (await open(group.resolve(path.slice(1)), { kind: "group" })).attrs;
        } catch (err) {
            line.error = describe(err);
        }
        console.log(JSON.stringify(line));
    }
    if (!names.length) {
        names = contents.filter((c) => c.kind === "array").map((c) => c.path.slice(1));
    }
    for (let name of names) {
        let line = { name };
        try {
            let arr = await open(group.resolve(name), { kind: "array" });
            Object.assign(line, meta(arr));
            try {
                let plain = await open(new zarr.Location(fsStore).resolve(name), { kind: "array" });
                line.plain = meta(plain);
            } catch (err) {
                line.plain = { error: describe(err) };
            }
            let [kind, values] = valuesC(await zarr.get(arr));
            line.values_as = kind;
            line.values = values;
        } catch (err) {
            line.error = describe(err);
        }
        console.log(JSON.stringify(line));
    }
}

main(process.argv.slice(2)).catch((err) => {
    console.error(`read.mjs: ${process.argv[2] ?? ""}: ${describe(err)}`);
    process.exit(1);
});
