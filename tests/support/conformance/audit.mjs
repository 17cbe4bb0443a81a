// Runs every graphql-http server audit against the GraphQL URL given as the only argument and
// prints a JSON list of {name, status, reason}; exits 0 only when every audit is ok.
import { serverAudits } from 'graphql-http';

const url = process.argv[2];
if (!url || process.argv.length > 3) {
  console.error('usage: node audit.mjs <graphql-url>');
  process.exit(2);
}

const results = [];
for (const { name, fn } of serverAudits({ url })) {
  try {
    const result = await fn();
    results.push({ name, status: result.status, reason: result.reason ?? null });
  } catch (err) {
    // An audit throws only on a fatal error (the server could not be reached, for example).
    results.push({ name, status: 'error', reason: `audit crashed: ${err}` });
  }
}
console.log(JSON.stringify(results, null, 2));
process.exit(results.every((r) => r.status === 'ok') ? 0 : 1);
