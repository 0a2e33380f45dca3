// Column helpers shared by the table files.
import { sql } from "drizzle-orm";
import { customType, varchar } from "drizzle-orm/pg-core";

export const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => "bytea",
});

/** wazo-auth's uuid primary keys: varchar(38) filled by the database. */
export const uuidPk = () => varchar("uuid", { length: 38 }).primaryKey().default(sql`gen_random_uuid()::text`);
