; PHP: definitions, calls and imports (read by prism_code/parse/tagged.py).

(class_declaration name: (_) @name body: (_)? @body) @definition.class
(interface_declaration name: (_) @name body: (_)? @body) @definition.interface
(trait_declaration name: (_) @name body: (_)? @body) @definition.trait
(enum_declaration name: (_) @name body: (_)? @body) @definition.enum

(function_definition name: (_) @name body: (_)? @body) @definition.function
(method_declaration name: (_) @name body: (_)? @body) @definition.method

; `$handler = function (...) {...};` / `= fn (...) => ...;` at any level (the closure is looked
; for among the children in code: a pattern naming it is slow on nested closures, tagged.py).
((assignment_expression . left: (variable_name (name) @name)) @definition.function
  (#set! definition.child "anonymous_function arrow_function"))

(function_call_expression function: (_) @callee)
(member_call_expression) @callee
(nullsafe_member_call_expression) @callee
(scoped_call_expression) @callee
(object_creation_expression [(name) (qualified_name)] @callee)

((namespace_use_declaration) @import (#set! import.read "php_use"))
([(require_expression) (require_once_expression) (include_expression) (include_once_expression)] @import
  (#set! import.read "php_require"))
