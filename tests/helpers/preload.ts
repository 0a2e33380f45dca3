// Loaded before every test file (bunfig.toml): fail fast when PostgreSQL was asked for but is down.
if (process.env.TEST_DATABASE_URL) {
  const { default: postgres } = await import("postgres");
  const sql = postgres(process.env.TEST_DATABASE_URL, { max: 1, connect_timeout: 5, onnotice: () => {} });
  try {
    await sql`select 1`;
  } catch (e) {
    console.error(`TEST_DATABASE_URL is set but PostgreSQL is unreachable: ${(e as Error).message}`);
    process.exit(1);
  } finally {
    await sql.end();
  }
}
export {};
