// The ceiling: a bare Bun.serve answering 204, measured with the same load as the token check. A
// POST is read and answered a small JSON body (the ceiling of a form-posting endpoint such as
// introspection).
const port = Number(process.argv[2] ?? 9600);
Bun.serve({
  hostname: "127.0.0.1",
  port,
  fetch: async (req) =>
    req.method === "POST"
      ? new Response(JSON.stringify({ active: (await req.text()).length > 0 }), {
          headers: { "Content-Type": "application/json" },
        })
      : new Response(null, { status: 204 }),
});
console.log(`ceiling listening on ${port}`);
