import test from 'ava';
import { resolveDotSegments, targetPath } from '../../edge/upstream/paths.js';

test('dot segments resolved as RFC 3986 says, plain and percent-encoded', (t) => {
  const cases: [string, string][] = [
    ['/', '/'],
    ['/a/b', '/a/b'],
    ['/a/./b', '/a/b'],
    ['/a/../b', '/b'],
    ['/a/b/..', '/a/'],
    ['/a/b/.', '/a/b/'],
    ['/a/%2e/b', '/a/b'],
    ['/a/%2E%2e/b', '/b'],
    ['/a/.%2E/b', '/b'],
    ['/a//b', '/a//b'],
    ['/a/...', '/a/...'],
  ];
  for (const [input, out] of cases) t.is(resolveDotSegments(input), out, input);
});

test('a path that climbs above the root, or hides .. behind an encoded slash, is refused', (t) => {
  for (const bad of ['/..', '/a/../..', '/%2e%2e/x', '/a/..%2f..%2fetc', '/a/%2e%2e%5cx', '/..%2F']) {
    t.throws(() => resolveDotSegments(bad), undefined, bad);
  }
  t.throws(() => resolveDotSegments('a/b'), { message: /must start with \// });
});

test('target path: the target URL path first, its query parameters win over the client', (t) => {
  t.is(targetPath(new URL('http://t/'), '/x/../y?q=1'), '/y?q=1');
  t.is(targetPath(new URL('http://t/app'), '/x'), '/app/x');
  t.is(targetPath(new URL('http://t/app/'), '/x?'), '/app/x?');
  t.is(targetPath(new URL('http://t/app?role=viewer'), '/x?role=admin&a=1'), '/app/x?role=viewer&a=1');
  t.is(targetPath(new URL('http://t/app?role=viewer'), '/x?ro%6ce=admin'), '/app/x?role=viewer');
  t.is(targetPath(new URL('http://t/'), '/x#frag'), '/x');
  t.throws(() => targetPath(new URL('http://t/app'), '/../secret'));
});
