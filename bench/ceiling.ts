// The ceiling: a bare Bun.serve answering 204, measured with the same load as the token check.
const port = Number(process.argv[2] ?? 9600);
Bun.serve({ hostname: "127.0.0.1", port, fetch: () => new Response(null, { status: 204 }) });
console.log(`ceiling listening on ${port}`);
