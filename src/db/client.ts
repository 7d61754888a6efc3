import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

function build(d1: D1Database) {
  return drizzle(d1, { schema });
}

export type Db = ReturnType<typeof build>;

// One drizzle instance per D1 binding for the isolate's life: building one walks the whole schema
// (extractTablesRelationalConfig), which was about a sixth of the CPU of a council dialog request in a
// profile. The instance holds nothing but the binding, so requests can share it.
const instances = new WeakMap<D1Database, Db>();

export function getDb(d1: D1Database): Db {
  let db = instances.get(d1);
  if (!db) {
    db = build(d1);
    instances.set(d1, db);
  }
  return db;
}
