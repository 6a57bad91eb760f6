// What both console walks share (Chromium's in tests/console, Firefox's in tests/firefox): the
// world tests/e2e/console.rs hands over in $WORLD, named steps that count passes and failures,
// a plain assertion, and the ending: no page raised a script error, then the "N passed, M
// failed" line the Rust side reads.

export const world = JSON.parse(process.env.WORLD);
export const base = world.url;
let passed = 0;
let failed = 0;

export async function step(name, fn) {
  try {
    await fn();
    passed += 1;
    console.log(`ok   ${name}`);
  } catch (e) {
    failed += 1;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}

export function expect(condition, message) {
  if (!condition) throw new Error(message);
}

// The last step (no page raised any of `errors`), the browser closed and the summary printed;
// the exit code.
export async function finish(browser, errors) {
  await step('no page raised a script error', async () => {
    expect(errors.length === 0, errors.join('\n'));
  });
  await browser.close();
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}
