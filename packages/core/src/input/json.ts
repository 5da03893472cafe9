/** A JSON value as stored in a `jsonb` column (PostgreSQL 17 §8.14). */
export type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };
