; Elixir: definitions, calls and imports (read by prism_code/parse/tagged.py).
; `defmodule`, `def` and the rest are macro calls in the grammar: `(call target: (identifier))`.

; `defmodule Shop.Cart do ... end`: module Cart owned by Shop.
((call target: (identifier) @_kind
   (arguments . (alias) @name)
   (do_block)? @body) @definition.module
  (#any-of? @_kind "defmodule" "defprotocol")
  (#set! name.split "."))
; `defimpl Priced, for: Item do ... end` is the module Priced.Item.
((call target: (identifier) @_kind
   (arguments . (alias) @qualifier (keywords (pair value: (alias) @name)))
   (do_block)? @body) @definition.impl
  (#eq? @_kind "defimpl"))
((call target: (identifier) @_kind
   (arguments . (alias) @name .)
   (do_block)? @body) @definition.impl
  (#eq? @_kind "defimpl"))

; `def f(x) do ... end`, `def f(x), do: ...`, `def f(x) when x > 0 do`, `def f` (no arguments).
((call target: (identifier) @_kind
   (arguments . [(call target: (identifier) @name)
                 (identifier) @name
                 (binary_operator left: (call target: (identifier) @name) operator: "when")
                 (binary_operator left: (identifier) @name operator: "when")]
     (keywords)? @body)
   (do_block)? @body) @definition.function
  (#any-of? @_kind "def" "defp" "defmacro" "defmacrop" "defguard" "defguardp" "defdelegate" "defn" "defnp"))

; Calls, but not the definition keywords and directives around them.
; (py-tree-sitter 0.26 ignores #not-any-of?; #not-match? works.)
((call target: (identifier) @callee)
  (#not-match? @callee "^(def|defp|defmacro|defmacrop|defguard|defguardp|defdelegate|defmodule|defprotocol|defimpl|defstruct|defexception|defoverridable|defn|defnp|alias|import|use|require|quote|unquote|doc|moduledoc|typedoc|spec|type|typep|opaque|callback|macrocallback|impl|behaviour|derive|enforce_keys|compile|deprecated|dialyzer|external_resource|before_compile|after_compile)$"))
(call target: (dot left: (_) right: (identifier)) @callee)

((call target: (identifier) @_directive (arguments . [(alias) (dot)])) @import
  (#any-of? @_directive "alias" "import" "use" "require")
  (#set! import.read "elixir_alias"))
