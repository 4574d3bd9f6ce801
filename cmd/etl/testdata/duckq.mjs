// duckq runs SQL in DuckDB, the tests' independent reader of the Parquet
// lake: a JSON array of statements on stdin, a JSON array of their results
// (each an array of rows, each an object of column: value, as JSON) on
// stdout. DUCKDB_NODE_API is the path of @duckdb/node-api's lib/index.js,
// which `make duckdb` installs into bin/tools/duckdb.
import { pathToFileURL } from 'node:url';

const { DuckDBInstance } = await import(pathToFileURL(process.env.DUCKDB_NODE_API).href);
let input = '';
for await (const chunk of process.stdin) input += chunk;
const instance = await DuckDBInstance.create(':memory:');
const con = await instance.connect();
const out = [];
for (const sql of JSON.parse(input)) {
  try {
    const reader = await con.runAndReadAll(sql);
    out.push(reader.getRowObjectsJson());
  } catch (e) {
    process.stderr.write(`duckdb: ${e.message}\nin: ${sql}\n`);
    process.exit(1);
  }
}
process.stdout.write(JSON.stringify(out));
