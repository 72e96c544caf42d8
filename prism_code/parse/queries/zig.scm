; Zig: definitions, calls and imports (read by prism_code/parse/tagged.py).

(function_declaration name: (_) @name body: (_)? @body) @definition.function
; `const Cart = struct {...}`, `pub const Color = enum {...}`, unions and opaque types. (Which
; declarations hold one is checked on the node's children: see `definition.child` in tagged.py.)
((variable_declaration . (identifier) @name) @definition.struct
  (#set! definition.child "struct_declaration enum_declaration union_declaration opaque_declaration"))
; `test "cart total" {...}`, `test helper {...}`
(test_declaration [(string (string_content) @name) (identifier) @name] (block) @body) @definition.test

(call_expression function: (_) @callee)

((builtin_function (builtin_identifier) @_import
   (arguments . (string (string_content) @import.module))) @import
  (#eq? @_import "@import"))
