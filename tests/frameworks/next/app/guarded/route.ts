// What middleware.ts (or proxy.ts) lets through.
export function GET() {
  return new Response("ok");
}
