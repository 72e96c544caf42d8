"""Which definitions a call site really calls: scopes, imports and class hierarchies (issue #26).

A call is resolved the way a careful reader resolves it, from what the parse recorded
(prism_code.parse.bindings):

- a bare name is looked up in the calling function, then the functions around it, then the
  module (its definitions, assignments and imports, the last binding winning), then
  `from m import *`; a name bound nowhere is a builtin or undefined and calls nothing here.
  A local variable or parameter shadows the module's definition of that name, and a name
  an import binds from outside the repository (`from datetime import date`) never reaches
  into it;
- `a.b.m()` follows `a` (a module, a class, an instance), then each attribute: a module's
  own names and submodules, a class's members along its method resolution order;
- instances are known from simple local evidence only: a parameter or variable annotated
  with a class, `x = Class(...)` (or a function whose return annotation names a class),
  `self.x = Class(...)` in any method, module-level `x = Class()`;
- `self.m()` / `this.m()` / `cls.m()` look in the calling method's class and then its bases;
  `super().m()` in the bases only; a base from outside the repository may define anything,
  so a lookup that reaches one stops there without an answer;
- a call to a class (`Dog(...)`, `new Dog()`) is a call of the class definition itself, not
  of its `__init__` / `constructor` (the convention of the call graph benchmark);
- a name that holds a function or class by assignment (`factory = Dog`, a class attribute
  `set_class = OrderedSet`) is followed to find what it holds, but calling it is not counted
  as a call of that definition: the name may be rebound (a subclass sets its own class
  attribute), and jedi's goto, the reference we measure against, stops there too. A property
  is read as the value its return annotation names;
- a receiver that is a chain of calls (`$li.eq(0).parent()`, prism_code.call_chain) is typed
  step by step through each callee's return annotation (`): Cheerio<T>`; `): this` is the
  instance it was called on);
- TypeScript: a function declaring `this: Cheerio<T>` is a method of Cheerio (the idiom of
  methods mixed into a class's prototype), and `this` in it is a Cheerio;
- JavaScript and TypeScript: `x.m()` on a receiver of unknown type, not imported from outside,
  links the repository's one method named `m` unless a built-in object has a member so named
  (prism_code.js_builtins: `rows.filter()` is an Array's).

Python, JavaScript and TypeScript are resolved this way. The other languages keep the
graph's older, conservative rules (prism_code.call_conservative): same class, same file, an
imported symbol or module, and a name defined once in the repository.

Results are (path, qualname) pairs; the graph turns them into node ids. Every lookup
records which files it read, so the graph can tell which files' calls an edit may change.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from prism_code.call_chain import CALL, call_chain
from prism_code.call_conservative import ConservativeRules, one_method_named
from prism_code.call_index import SELF_NAMES, FileIndex, ResolutionCache, build_index
from prism_code.call_values import (
    OPAQUE,
    UNBOUND,
    Target,
    Value,
    c3_merge,
    definition_value,
    is_property,
    join_module,
    return_annotation,
)
from prism_code.js_builtins import may_be_builtin_member
from prism_code.parse.bindings import dotted
from prism_code.parse.model import Binding, CallSite, Definition, Import, ParsedFile
from prism_code.parse.resolve import ModuleResolver

# Languages resolved through scopes and bindings; the others by prism_code.call_conservative.
SCOPED_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx"})
# Languages where a method call on a receiver of unknown type may link the one method so named.
UNIQUE_METHOD_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
# Languages whose functions may declare what `this` is (`function f(this: Cheerio<T>)`).
THIS_TYPED_LANGUAGES = frozenset({"typescript", "tsx"})
# Bases from outside the repository that define no ordinary methods: a lookup may pass them.
_EMPTY_BASES = frozenset({
    "object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol", "typing.Protocol",
    "typing_extensions.Protocol", "ABCMeta", "abc.ABCMeta",
})
# How the receiver of an instance method, and of a class method, is spelled.
_SELF = SELF_NAMES
_CLS = "cls"
# How many lookups may nest (an alias of an alias, a base of a base, a re-export of a
# re-export) before one gives up without an answer: real code nests a handful; a generated
# chain of thousands would otherwise exhaust Python's stack.
MAX_NESTED_LOOKUPS = 48
_SUPER = re.compile(r"super(?:\(\s*\)|\(\s*([\w.]+)\s*,\s*\w+\s*\))?")

__all__ = ["SCOPED_LANGUAGES", "CallResolver", "FileResolution", "Target", "Value"]


@dataclass
class FileResolution:
    """One file's resolved calls and overrides, and the files read to resolve them."""

    calls: list[tuple[CallSite, list[Target]]]
    overrides: list[tuple[Target, Target]]  # (method, the method it overrides)
    consulted: frozenset[str]
    # Calls left unresolved whose name is defined once in the repository, on a receiver of
    # unknown type: maybe that definition (see name_matches). Never presented as calls.
    name_matches: list[tuple[CallSite, Target]] = field(default_factory=list)


@dataclass(frozen=True)
class _Done:
    """A memoized result and the files computing it read."""

    value: object
    reads: set[str]


_IN_PROGRESS = object()  # a memo entry being computed: asking for it again is a cycle


class CallResolver:
    """Resolves the calls of files against a set of parsed files; results are memoized for
    the resolver's lifetime, so make one per graph update (the files must not change)."""

    def __init__(self, files: Mapping[str, ParsedFile], modules: ModuleResolver,
                 named: Callable[[str, int | None], Iterable[Target]],
                 cache: ResolutionCache | None = None) -> None:
        self.files = files
        self.modules = modules
        # Every definition with this name, anywhere; none when there are more than the limit.
        self.named = named
        cache = cache or ResolutionCache()
        if cache.modules is not modules:
            cache.imports.clear()
            cache.modules = modules
        self._indexes = cache.indexes
        self._resolved_imports = cache.imports
        self._memo: dict[tuple[object, ...], object] = {}  # key -> _Done or _IN_PROGRESS
        self._reads: list[set[str]] = [set()]
        self._conservative = ConservativeRules(named, self._index, self._import_files)

    # ---- entry points ---------------------------------------------------------------------

    def resolve_file(self, pf: ParsedFile) -> FileResolution:
        self._reads = [{pf.path}]
        calls = [(call, self.resolve_call(pf, call)) for call in pf.calls]
        if pf.language not in SCOPED_LANGUAGES:
            return FileResolution(calls, [], frozenset(self._reads[0]))
        overrides = self._overrides(pf)
        matches = [(call, target) for call, targets in calls if not targets
                   for target in self.name_matches(pf, call)]
        return FileResolution(calls, overrides, frozenset(self._reads[0]), matches)

    def name_matches(self, pf: ParsedFile, call: CallSite) -> list[Target]:
        """The one definition named like an unresolved method call, when its receiver is of
        unknown type but not something imported from outside the repository. Measured
        against jedi on tomlkit, marshmallow and wtforms, such a guess is right 39 times in
        91 (for a bare name or an outside receiver, 0 in 21): a relation, not a call."""
        receiver = call.receiver
        if receiver is None or _SUPER.fullmatch(receiver):
            return []
        candidates = list(dict.fromkeys(self.named(call.name, 1)))
        if len(candidates) != 1:
            return []
        head = receiver.split(".", 1)[0]
        return [] if head in self._outside_names(pf.path) else candidates

    def _outside_names(self, path: str) -> frozenset[str]:
        """Names the file's imports bind from outside the repository."""
        key = ("outside-names", path)
        hit = self._memo.get(key)
        if isinstance(hit, _Done) and isinstance(hit.value, frozenset):
            return hit.value
        index = self._index(path)
        names = frozenset(name for name, imports in (index.imported.items() if index else ())
                          if all(not self._import_files(path, imp) for imp in imports))
        self._memo[key] = _Done(names, {path})
        return names

    def resolve_call(self, pf: ParsedFile, call: CallSite) -> list[Target]:
        if pf.language not in SCOPED_LANGUAGES:
            return self._conservative.targets(pf, call)
        value = self._callee(pf.path, call)
        if value is None and pf.language in UNIQUE_METHOD_LANGUAGES:
            value = self._unique_method(pf, call)
        if value is None or value.kind not in ("function", "class") or value is OPAQUE or value.via_assignment:
            return []
        return [(value.path, value.qualname)]

    def _unique_method(self, pf: ParsedFile, call: CallSite) -> Value | None:
        """For `x.m()` on a receiver of unknown type (a parameter without a type, what an
        untyped call returned), the repository's one method named `m`, if no built-in object
        of JavaScript has a member so named and `x` is not imported from outside. A method
        counts as one when it has a body, or is a function declaring `this: Class`."""
        receiver = call.receiver
        if receiver is None or receiver == "super" or may_be_builtin_member(call.name):
            return None
        if receiver.split(".", 1)[0] in self._outside_names(pf.path):
            return None
        if self._expression(pf.path, call.caller, receiver, call.line) is not None:
            return None  # a receiver of known type that lacks the member: not this one's

        return self._memoized_value(("unique-method", call.name),
                                    lambda: one_method_named(call.name, self.named, self._index))

    # ---- memo with the files each result read ---------------------------------------------

    def _memoized(self, key: tuple[object, ...], compute: Callable[[], object], cycle: object) -> object:
        """compute() once per key; a key asked for while it is computed (`a = b; b = a`, a
        class among its own bases) gets `cycle`. The files a result read count as read again
        by every later use of it."""
        hit = self._memo.get(key)
        if hit is _IN_PROGRESS:
            return cycle
        if isinstance(hit, _Done):
            self._reads[-1] |= hit.reads
            return hit.value
        if len(self._reads) > MAX_NESTED_LOOKUPS:
            return cycle  # not memoized: asked from less deep, it may still find the answer
        self._memo[key] = _IN_PROGRESS
        self._reads.append(set())
        value = cycle
        try:
            value = compute()
        finally:
            reads = self._reads.pop()  # never changed again: kept as it is
            self._memo[key] = _Done(value, reads)
            self._reads[-1] |= reads
        return value

    def _memoized_value(self, key: tuple[object, ...], compute: Callable[[], Value | None]) -> Value | None:
        value = self._memoized(key, compute, None)
        return value if isinstance(value, Value) else None

    def _index(self, path: str) -> FileIndex | None:
        pf = self.files.get(path)
        if pf is None:
            return None
        self._reads[-1].add(path)
        index = self._indexes.get(path)
        if index is None or index.pf is not pf:
            index = self._indexes[path] = build_index(pf)
        return index

    # ---- names ----------------------------------------------------------------------------

    def _callee(self, path: str, call: CallSite) -> Value | None:
        scope, receiver = call.caller, call.receiver
        if receiver is None:
            return self._lookup(path, scope, call.name, call.line)[1]
        sup = _SUPER.fullmatch(receiver)
        if sup is not None:
            cls = (self._expression(path, scope, sup.group(1), call.line) if sup.group(1)
                   else self._own_class(path, scope))
            if cls is None or cls.kind != "class":
                return None
            return self._member_in_bases(cls, call.name)
        owner = self._expression(path, scope, receiver, call.line)
        return self._attribute(owner, call.name) if owner is not None else None

    def _lookup(self, path: str, scope: str | None, name: str, line: int | None) -> tuple[bool, Value | None]:
        """(whether `name` is bound where `scope` sees it, what it denotes if known)."""
        index = self._index(path)
        if index is None:
            return False, None
        current = scope
        while current is not None:
            definition = index.by_qualname.get(current)
            if definition is None:
                break
            # A class body's names are not seen from inside its methods.
            if (current, name) in index.entries and (definition.kind != "class" or current == scope):
                return self._bound_in(index, current, name, line)
            current = definition.parent
        return self._module_name(path, name)

    def _module_name(self, path: str, name: str) -> tuple[bool, Value | None]:
        key = ("module-name", path, name)
        hit = self._memo.get(key)  # the common case, memoized, without _memoized's calls
        found = hit.value if isinstance(hit, _Done) else None
        if isinstance(hit, _Done):
            self._reads[-1] |= hit.reads
        else:
            found = self._memoized_value(key, lambda: self._module_name_value(path, name))
        if found is UNBOUND:
            return False, None
        return True, found if isinstance(found, Value) else None

    def _module_name_value(self, path: str, name: str) -> Value | None:
        index = self._index(path)
        if index is None:
            return UNBOUND
        found, value = self._bound_in(index, None, name, None)
        if found:
            return value
        for imp in index.star_imports:
            for target in self._import_files(path, imp):
                if target != path:
                    found, value = self._module_name(target, name)
                    if found:
                        return value
        return UNBOUND

    def _bound_in(self, index: FileIndex, scope: str | None, name: str,
                  line: int | None) -> tuple[bool, Value | None]:
        """The binding of `name` in exactly this scope that is in effect at `line` (the last one
        on an earlier line: `x = x.parent()` reads the previous `x`; else the last one, which a
        loop or a later call may see); definitions win ties."""
        entries = index.entries.get((scope, name))
        if not entries:
            return False, None
        chosen = entries[-1][2]
        if line is not None:
            for entry in reversed(entries):
                if entry[0] < line:
                    chosen = entry[2]
                    break
        path = index.pf.path
        if isinstance(chosen, Definition):
            return True, definition_value(path, chosen)
        if isinstance(chosen, Binding):
            return True, self._binding_value(path, chosen)
        imp, imported = chosen
        return True, self._import_value(path, imp, imported)

    def _binding_value(self, path: str, binding: Binding) -> Value | None:
        if binding.kind == "local" or not binding.evidence:
            return None
        key = ("binding", path, binding.scope, binding.name, binding.line, binding.evidence)

        def compute() -> Value | None:
            # The evidence is read where the binding is, just before it (`x = x.child`).
            value = self._expression(path, binding.scope, binding.evidence, binding.line)
            if binding.kind == "instance":
                return self._instance_of(value)
            return replace(value, via_assignment=True) if value is not None else None
        return self._memoized_value(key, compute)

    def _instance_of(self, value: Value | None) -> Value | None:
        """An instance of a class; what a function's return annotation names."""
        if value is None or value is OPAQUE:
            return None
        if value.kind == "class":
            return Value("instance", value.path, value.qualname)
        if value.kind != "function":
            return None
        index = self._index(value.path)
        definition = index.by_qualname.get(value.qualname) if index is not None else None
        returned = return_annotation(definition.signature) if definition is not None else ""
        if not returned or definition is None:
            return None
        if returned == "this":  # `): this`: the instance the method was called on, read as its class's
            own = self._expression(value.path, definition.qualname, "this", None)
            return own if own is not None and own.kind == "instance" else None
        named = self._expression(value.path, definition.parent, returned, None)
        return Value("instance", named.path, named.qualname) if named is not None and named.kind == "class" \
            and named is not OPAQUE else None

    def _expression(self, path: str, scope: str | None, text: str, line: int | None) -> Value | None:
        """What a dotted expression denotes in `scope`: `self.pet`, `registry`, `zoo.dates`."""
        if not text:
            return None
        if dotted(text):
            head, *rest = text.split(".")
        else:  # a chain of calls: `$li.eq(0).parent()`, `new Dog().owner()`
            chain = call_chain(text)
            if chain is None:
                return None
            head, *rest = chain
        value: Value | None
        if head in _SELF or head == _CLS:
            own = self._own_class(path, scope)
            found, local = self._lookup(path, scope, head, line)
            if own is None or (found and local is not None):
                value = local  # not a method, or the name was given a known value
            else:
                value = own if head == _CLS else Value("instance", own.path, own.qualname)
        else:
            value = self._lookup(path, scope, head, line)[1]
        for name in rest:
            if value is None:
                return None
            value = self._called(value) if name == CALL else self._attribute(value, name)
        return value

    def _called(self, value: Value) -> Value | None:
        """What calling `value` gives: an instance of a class, or of what a function's return
        annotation names."""
        if value.kind == "class":
            return self._instance_of(value)
        return self._instance_of(value) if value.kind == "function" else None

    def _own_class(self, path: str, scope: str | None) -> Value | None:
        """The class of the method around `scope` (a nested function sees its method's `self`)."""
        index = self._index(path)
        if index is None:
            return None
        current = scope
        while current is not None:
            definition = index.by_qualname.get(current)
            if definition is None:
                return None
            parent = index.by_qualname.get(definition.parent) if definition.parent else None
            if definition.kind != "class" and parent is not None and parent.kind == "class":
                return Value("class", path, parent.qualname)
            current = definition.parent
        return None

    # ---- imports --------------------------------------------------------------------------

    def import_files(self, path: str, imp: Import) -> list[str]:
        """The repository files an import in `path` reaches (the module resolver's answer)."""
        return self._import_files(path, imp)

    def _import_files(self, path: str, imp: Import) -> list[str]:
        pf = self.files.get(path)
        return self._module_files(path, imp, pf.language) if pf is not None else []

    def _module_files(self, path: str, imp: Import, language: str) -> list[str]:
        """The files an import in `path` reaches. Asked of the module resolver once per directory:
        files of one directory resolve an import alike (relative ones from there, absolute ones
        preferring the candidate closest to it), but for never reaching themselves."""
        directory = posixpath.dirname(path)
        key = (directory, imp.module, imp.level, imp.alias, imp.names, language)
        found = self._resolved_imports.get(key)
        if found is None:
            # A file name no real file has: the resolver leaves out only the importing file.
            found = self._resolved_imports[key] = self.modules.resolve(imp, posixpath.join(directory, "\0"),
                                                                       language)
        return [target for target in found if target != path]

    def _import_value(self, path: str, imp: Import, imported: str | None) -> Value | None:
        key = ("import", path, imp, imported)
        return self._memoized_value(key, lambda: self._import_value_now(path, imp, imported))

    def _import_value_now(self, path: str, imp: Import, imported: str | None) -> Value | None:
        language = self.files[path].language if path in self.files else ""
        if imported is None:  # the import binds a module
            module = imp
            if language == "python" and not imp.alias and not imp.level and "." in imp.module:
                module = Import(imp.module.split(".")[0], imp.line)  # `import a.b` binds `a`
            files = self._module_files(path, Import(module.module, imp.line, (), None, module.level), language)
            return Value("module", files[0]) if files else None
        files = self._module_files(path, Import(imp.module, imp.line, (), None, imp.level), language)
        for target in files:
            if target == path:
                continue
            if imported == "*":
                return Value("module", target)
            found, value = self._module_name(target, imported)
            if found:
                return value
        if language == "python":  # `from package import submodule`, when the package does not bind it
            submodule = self._module_files(path, Import(join_module(imp.module, imported), imp.line, (), None,
                                                        imp.level), language)
            if submodule:
                return Value("module", submodule[0])
        return None

    # ---- members --------------------------------------------------------------------------

    def _attribute(self, owner: Value, name: str) -> Value | None:
        if owner is OPAQUE:
            return None
        if owner.kind == "module":
            found, value = self._module_name(owner.path, name)
            if found:
                return value
            submodule = self._submodule(owner.path, name)
            return Value("module", submodule) if submodule else None
        if owner.kind in ("class", "instance"):
            return self._member(Value("class", owner.path, owner.qualname), name, owner.kind == "instance")
        return None

    def _submodule(self, path: str, name: str) -> str | None:
        if posixpath.basename(path) not in ("__init__.py", "__init__.pyi"):
            return None
        directory = posixpath.dirname(path)
        for candidate in (f"{directory}/{name}.py" if directory else f"{name}.py",
                          posixpath.join(directory, name, "__init__.py")):
            if candidate in self.files:
                self._reads[-1].add(candidate)
                return candidate
        return None

    def _member(self, cls: Value, name: str, on_instance: bool) -> Value | None:
        """`name` looked up along the class's method resolution order."""
        for ancestor in self._mro(cls):
            if ancestor is OPAQUE:
                return None
            found, value = self._own_member(ancestor, name, on_instance)
            if found:
                return value
        return None

    def _member_in_bases(self, cls: Value, name: str) -> Value | None:
        """`super().name`: the nearest class after `cls` in its order that defines a method `name`."""
        for ancestor in self._mro(cls)[1:]:
            if ancestor is OPAQUE:
                return None
            found, value = self._own_member(ancestor, name, on_instance=False)
            if found:
                return value
        return None

    def _own_member(self, cls: Value, name: str, on_instance: bool) -> tuple[bool, Value | None]:
        index = self._index(cls.path)
        if index is None:
            return False, None
        definitions = index.members.get((cls.qualname, name))
        if definitions:
            definition = definitions[-1]
            if is_property(definition):
                value = self._instance_of(definition_value(cls.path, definition))
                return True, replace(value, via_assignment=True) if value is not None else None
            return True, definition_value(cls.path, definition)
        found, value = self._bound_in(index, cls.qualname, name, None)
        if found:
            return True, value
        if on_instance:
            assigned = index.attributes.get((cls.qualname, name))
            if assigned:
                # `self.x = None` beside `self.x = Dog()` still makes a dog of `self.x`.
                values = {self._binding_value(cls.path, binding) for binding in assigned} - {None}
                return True, values.pop() if len(values) == 1 else None
            if index.pf.language in THIS_TYPED_LANGUAGES:
                mixed_in = self._this_typed_member(cls, name)
                if mixed_in is not None:
                    return True, mixed_in
        return False, None

    def _this_typed_member(self, cls: Value, name: str) -> Value | None:
        """The function named `name` whose `this` parameter says it is a method of `cls`
        (`function attr(this: Cheerio<T>)`, mixed in by `Object.assign(Cheerio.prototype, ...)`),
        anywhere in the repository; none when two such functions share the name."""
        def compute() -> Value | None:
            found: set[Value] = set()
            for path, qualname in dict.fromkeys(self.named(name, None)):
                index = self._index(path)
                definition = index.by_qualname.get(qualname) if index is not None else None
                if index is None or definition is None or definition.kind == "class" \
                        or (qualname, "this") not in index.entries:
                    continue
                this = self._bound_in(index, qualname, "this", None)[1]
                if this is not None and this.kind == "instance" and (this.path, this.qualname) == (cls.path,
                                                                                                   cls.qualname):
                    found.add(definition_value(path, definition))
            return found.pop() if len(found) == 1 else None
        return self._memoized_value(("this-member", cls.path, cls.qualname, name), compute)

    def _mro(self, cls: Value) -> list[Value]:
        unknown = [cls, OPAQUE]  # a class among its own bases has no order we can trust
        order = self._memoized(("mro", cls.path, cls.qualname), lambda: self._linearize(cls), unknown)
        return order if isinstance(order, list) else unknown

    def _linearize(self, cls: Value) -> list[Value]:
        """C3 linearization (Python's method resolution order); an unknown base ends the order."""
        index = self._index(cls.path)
        definition = index.by_qualname.get(cls.qualname) if index is not None else None
        if definition is None:
            return [cls, OPAQUE]
        bases: list[Value] = []
        for text in definition.bases:
            if text in _EMPTY_BASES:
                continue
            base = self._expression(cls.path, definition.parent, text, definition.start_line)
            bases.append(base if base is not None and base.kind == "class" else OPAQUE)
        if not bases:
            return [cls]
        orders = [self._mro(base) if base is not OPAQUE else [OPAQUE] for base in bases]
        return [cls, *c3_merge([*orders, bases])]

    # ---- overrides ------------------------------------------------------------------------

    def _overrides(self, pf: ParsedFile) -> list[tuple[Target, Target]]:
        """(method, what it overrides) for every method of this file's classes: per direct base,
        the nearest definition of that name along the base's order."""
        found: list[tuple[Target, Target]] = []
        methods_of: dict[str, list[Definition]] = {}
        for definition in pf.definitions:
            if definition.kind == "method" and definition.parent:
                methods_of.setdefault(definition.parent, []).append(definition)
        for definition in pf.definitions:
            methods = methods_of.get(definition.qualname)
            if definition.kind != "class" or not definition.bases or not methods:
                continue
            order = self._mro(Value("class", pf.path, definition.qualname))
            for method in methods:
                seen: set[Target] = set()
                for ancestor in order[1:]:
                    if ancestor is OPAQUE:
                        break
                    index = self._index(ancestor.path)
                    overridden = index.members.get((ancestor.qualname, method.name)) if index else None
                    if overridden and overridden[-1].kind == "method":
                        target = (ancestor.path, overridden[-1].qualname)
                        if target not in seen:
                            seen.add(target)
                            found.append(((pf.path, method.qualname), target))
                        break
        return found
