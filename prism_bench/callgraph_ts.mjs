// Reference call edges of a TypeScript/JavaScript project, from the TypeScript language service.
//
// node callgraph_ts.mjs TYPESCRIPT_DIR PROJECT_ROOT < {"files": ["src/a.ts", ...]}
//
// Prints one JSON object: {"typescript", "files", "calls", "resolved", "signatureCalls", "seconds",
// "edges"}, each
// edge [callerPath, callerLine, calleePath, calleeLine, line, name]. prism_bench/callgraph.py
// documents what an edge is; in short, for every call `f()`, `x.m()`, `super(...)` and
// `new C()` in the listed files, getDefinitionAtPosition at the called name, kept when it lands
// on a function-like declaration of a listed file:
//   - a function or method with a body (an overload signature is replaced by the implementation
//     next to it; a signature without one, in an interface or abstract class, is no edge),
//   - a variable or class field initialised with an arrow function, function or class expression,
//   - a class, for `new C()` and `super(...)`: the class named (for super, the direct base), read
//     from the type checker's symbol, as the definition found is the constructor that runs, an
//     ancestor's when the class has none of its own.
// The caller is the innermost enclosing such definition; a class body or the top level is the
// module, line 0. Definitions are keyed by their first line, decorators and `export` left out,
// which is where the tree-sitter node prism indexes starts. Plain JavaScript, no build step.

import fs from "node:fs";
import path from "node:path";
import process from "node:process";
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";

const [typescriptDir, projectRoot] = process.argv.slice(2);
if (!typescriptDir || !projectRoot) {
  process.stderr.write("usage: node callgraph_ts.mjs TYPESCRIPT_DIR PROJECT_ROOT < files.json\n");
  process.exit(2);
}
const ts = createRequire(import.meta.url)(path.resolve(typescriptDir));
const root = path.resolve(projectRoot);
const listed = JSON.parse(fs.readFileSync(0, "utf8")).files;
const started = performance.now();

const relativeOf = new Map(listed.map((file) => [path.resolve(root, file), file]));
const texts = new Map([...relativeOf.keys()].map((file) => [file, fs.readFileSync(file, "utf8")]));

// The haystacks come without a tsconfig or node_modules: settings any modern project compiles
// under, imports resolved as a bundler does (with or without ".js" on relative paths).
const options = {
  allowJs: true,
  checkJs: false,
  noEmit: true,
  skipLibCheck: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  esModuleInterop: true,
  experimentalDecorators: true,
  types: [], // no @types picked up from folders around the cache
};

const host = {
  getScriptFileNames: () => [...texts.keys()],
  getScriptVersion: () => "1",
  getScriptSnapshot: (file) => {
    const text = texts.get(file) ?? (fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined);
    return text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
  },
  getCurrentDirectory: () => root,
  getCompilationSettings: () => options,
  getDefaultLibFileName: (settings) => ts.getDefaultLibFilePath(settings),
  fileExists: ts.sys.fileExists,
  readFile: ts.sys.readFile,
  readDirectory: ts.sys.readDirectory,
  directoryExists: ts.sys.directoryExists,
  getDirectories: ts.sys.getDirectories,
};
const service = ts.createLanguageService(host, ts.createDocumentRegistry());
const program = service.getProgram();
const checker = program.getTypeChecker();

const FUNCTION_VALUES = new Set([ts.SyntaxKind.ArrowFunction, ts.SyntaxKind.FunctionExpression]);

function unwrap(expression) {
  let node = expression;
  while (node && (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression?.(node))) {
    node = node.expression;
  }
  return node;
}

// The line a definition starts on: its first token after decorators and `export`/`default`.
function startLine(node, sourceFile) {
  let position = node.getStart(sourceFile);
  const modifiers = ts.canHaveModifiers(node) || ts.canHaveDecorators(node) ? node.modifiers ?? [] : [];
  for (const modifier of modifiers) {
    const skipped = ts.isDecorator(modifier) || modifier.kind === ts.SyntaxKind.ExportKeyword
      || modifier.kind === ts.SyntaxKind.DefaultKeyword;
    if (!skipped) break;
    position = ts.skipTrivia(sourceFile.text, modifier.end);
  }
  if (ts.isVariableDeclaration(node)) position = node.name.getStart(sourceFile);
  return sourceFile.getLineAndCharacterOfPosition(position).line + 1;
}

function keyOf(node) {
  const sourceFile = node.getSourceFile();
  const file = relativeOf.get(path.resolve(sourceFile.fileName));
  return file === undefined ? null : [file, startLine(node, sourceFile)];
}

function hasBody(node) {
  return node.body !== undefined;
}

// A definition that is a caller scope (and a callee when called): see the header.
function isNamedValue(node) {
  const value = unwrap(node.initializer);
  if (value === undefined) return false;
  if (ts.isVariableDeclaration(node)) {
    return ts.isIdentifier(node.name) && (FUNCTION_VALUES.has(value.kind) || ts.isClassExpression(value));
  }
  return ts.isPropertyDeclaration(node) && FUNCTION_VALUES.has(value.kind);
}

function isFunctionScope(node) {
  return (ts.isFunctionDeclaration(node) && node.name !== undefined && hasBody(node))
    || ((ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node) || ts.isGetAccessorDeclaration(node)
      || ts.isSetAccessorDeclaration(node)) && hasBody(node))
    || (isNamedValue(node) && !ts.isClassExpression(unwrap(node.initializer)));
}

function isClassScope(node) {
  return ts.isClassDeclaration(node)
    || (ts.isVariableDeclaration(node) && isNamedValue(node) && ts.isClassExpression(unwrap(node.initializer)));
}

// An overload signature's implementation: the same-named declaration with a body beside it.
function implementationOf(declaration) {
  const siblings = declaration.parent?.statements ?? declaration.parent?.members ?? [];
  const name = declaration.name?.getText();
  return siblings.find((other) => other.kind === declaration.kind && hasBody(other) && other.name?.getText() === name);
}

function classKey(classNode) {
  if (ts.isClassDeclaration(classNode)) return keyOf(classNode);
  const parent = classNode.parent;
  return ts.isClassExpression(classNode) && ts.isVariableDeclaration(parent) && isNamedValue(parent)
    ? keyOf(parent) : null;
}

function calleeKey(declaration) {
  if (ts.isConstructorDeclaration(declaration)) return classKey(declaration.parent);
  if (ts.isClassDeclaration(declaration) || ts.isClassExpression(declaration)) return classKey(declaration);
  if (ts.isFunctionDeclaration(declaration) || ts.isMethodDeclaration(declaration)) {
    const implementation = hasBody(declaration) ? declaration : implementationOf(declaration);
    return implementation === undefined ? null : keyOf(implementation);
  }
  if (isNamedValue(declaration)) return keyOf(declaration);
  return null;
}

// The deepest node spanning exactly [start, end): a declaration's name, or the declaration.
function nodeAt(sourceFile, start, end) {
  let found;
  const visit = (node) => {
    if (node.getStart(sourceFile) === start && node.end === end) found = node;
    ts.forEachChild(node, (child) => {
      if (child.pos <= start && end <= child.end) visit(child);
    });
  };
  visit(sourceFile);
  return found;
}

function declarationOf(definition) {
  const sourceFile = program.getSourceFile(definition.fileName);
  if (sourceFile === undefined) return undefined;
  const { start, length } = definition.textSpan;
  const node = nodeAt(sourceFile, start, start + length);
  if (node === undefined) return undefined;
  return node.parent && node.parent.name === node ? node.parent : node;
}

// The called name: `f` of `f()`, `m` of `x.m()`, the `super` of `super(...)`; none for `f()()`.
function calledName(call) {
  const callee = call.expression;
  if (ts.isIdentifier(callee) || callee.kind === ts.SyntaxKind.SuperKeyword) return callee;
  if (ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.name)) return callee.name;
  return undefined;
}

const edges = new Set();
let calls = 0;
let resolved = 0;
let signatureCalls = 0; // calls whose every definition is a signature without a body

// The class a `new C()` or `super(...)` constructs: the one named (the direct base for super),
// through import aliases. The definition of a constructor call is the constructor that runs,
// which for a class without its own is an ancestor's; the edge goes to the class named.
function constructedClassKey(call, name) {
  let target = name;
  if (name.kind === ts.SyntaxKind.SuperKeyword) {
    let scope = call.parent;
    while (scope !== undefined && !ts.isClassLike(scope)) scope = scope.parent;
    const base = scope?.heritageClauses?.find((clause) => clause.token === ts.SyntaxKind.ExtendsKeyword);
    target = base?.types[0]?.expression;
  }
  if (target === undefined) return null;
  let symbol = checker.getSymbolAtLocation(target);
  if (symbol !== undefined && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
  const declaration = symbol?.valueDeclaration ?? symbol?.declarations?.[0];
  if (declaration === undefined) return null;
  if (ts.isClassDeclaration(declaration) || ts.isClassExpression(declaration)) return classKey(declaration);
  return isClassScope(declaration) ? keyOf(declaration) : null;
}

function record(call, caller, sourceFile, file) {
  const name = calledName(call);
  if (name === undefined) return;
  calls += 1;
  const line = sourceFile.getLineAndCharacterOfPosition(call.expression.getStart(sourceFile)).line + 1;
  const text = name.kind === ts.SyntaxKind.SuperKeyword ? "super" : name.text;
  const definitions = service.getDefinitionAtPosition(sourceFile.fileName, name.getStart(sourceFile)) ?? [];
  const callees = new Map();
  let signaturesOnly = definitions.length > 0;
  for (const definition of definitions) {
    if (!relativeOf.has(path.resolve(definition.fileName))) {
      signaturesOnly = false;
      continue;
    }
    const declaration = declarationOf(definition);
    if (declaration === undefined) continue;
    const constructs = ts.isNewExpression(call) || name.kind === ts.SyntaxKind.SuperKeyword;
    const callee = constructs && (ts.isConstructorDeclaration(declaration) || ts.isClassLike(declaration))
      ? constructedClassKey(call, name) ?? calleeKey(declaration)
      : calleeKey(declaration);
    const bodiless = (ts.isMethodDeclaration(declaration) || ts.isMethodSignature(declaration)
      || ts.isFunctionDeclaration(declaration)) && callee === null;
    signaturesOnly &&= bodiless;
    if (callee !== null) callees.set(JSON.stringify(callee), callee);
  }
  if (signaturesOnly) signatureCalls += 1;
  for (const callee of callees.values()) edges.add(JSON.stringify([file, caller[1], ...callee, line, text]));
  if (callees.size > 0) resolved += 1;
}

for (const [absolute, file] of relativeOf) {
  const sourceFile = program.getSourceFile(absolute);
  if (sourceFile === undefined) {
    process.stderr.write(`callgraph_ts: ${file} is not in the program\n`);
    continue;
  }
  const visit = (node, caller) => {
    if (ts.isCallExpression(node) || ts.isNewExpression(node)) record(node, caller, sourceFile, file);
    let inner = caller;
    if (isFunctionScope(node)) inner = keyOf(node);
    else if (isClassScope(node)) inner = [file, 0];
    // A decorator runs where its class or method is defined, not inside it.
    ts.forEachChild(node, (child) => visit(child, ts.isDecorator(child) ? caller : inner));
  };
  visit(sourceFile, [file, 0]);
}

const out = {
  typescript: ts.version,
  files: relativeOf.size,
  calls,
  resolved,
  signatureCalls,
  seconds: (performance.now() - started) / 1000,
  edges: [...edges].map((edge) => JSON.parse(edge)),
};
process.stdout.write(JSON.stringify(out) + "\n");
