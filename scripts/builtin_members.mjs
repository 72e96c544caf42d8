// Writes prism_code/data/js_builtin_members.txt: every member name that JavaScript's built-in
// objects declare (Array, String, Map, Set, Promise, Object, ...), read from the ECMAScript
// libraries of npm's `typescript` (node_modules/typescript/lib/lib.es*.d.ts; the DOM and
// other host libraries are left out). Call resolution never links a call on an untyped
// receiver by such a name alone (methods, and properties typed as functions or objects): `xs.filter(...)` is far likelier Array's than the repository's.
//
// Run from the checkout after `npm ci`: node scripts/builtin_members.mjs
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ts = require("typescript");
const libDir = path.dirname(require.resolve("typescript/lib/lib.es5.d.ts"));
const names = new Set();

function memberName(member) {
  const name = member.name;
  if (!name) return undefined;
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name)) return name.text;
  if (ts.isStringLiteral(name)) return name.text;
  return undefined; // computed names such as [Symbol.iterator]
}

function callable(member) {
  if (ts.isMethodSignature(member) || ts.isMethodDeclaration(member)) return true;
  const type = member.type;
  return Boolean(type && (ts.isFunctionTypeNode(type) || ts.isTypeLiteralNode(type) || ts.isTypeReferenceNode(type)));
}

function visit(node) {
  if (ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node) || ts.isTypeLiteralNode(node)) {
    for (const member of node.members) {
      if (!callable(member)) continue; // `RegExpMatchArray.index` is never called
      const name = memberName(member);
      if (name && /^[A-Za-z_$][\w$]*$/.test(name)) names.add(name);
    }
  }
  ts.forEachChild(node, visit);
}

const libraries = fs.readdirSync(libDir).filter((file) => /^lib\.es[\w.]*\.d\.ts$/.test(file)).sort();
for (const file of libraries) {
  const text = fs.readFileSync(path.join(libDir, file), "utf8");
  visit(ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false));
}
const out = path.join(path.dirname(new URL(import.meta.url).pathname), "..", "prism_code", "data",
                      "js_builtin_members.txt");
fs.mkdirSync(path.dirname(out), { recursive: true });
const header = `# Member names of JavaScript's built-in objects: typescript ${ts.version}, ` +
  `${libraries.length} lib.es*.d.ts files (scripts/builtin_members.mjs).\n`;
fs.writeFileSync(out, header + [...names].sort().join("\n") + "\n");
console.log(`${names.size} names from ${libraries.length} libraries -> ${out}`);
