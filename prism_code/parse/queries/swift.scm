; Swift: definitions, calls and imports (read by prism_code/parse/tagged.py).

; class, struct, enum, actor and `extension T` (named after T) are all class_declaration.
(class_declaration name: (type_identifier) @name body: (_)? @body) @definition.class
(class_declaration name: (user_type (type_identifier) @name) body: (_)? @body) @definition.class
(protocol_declaration name: (_) @name body: (_)? @body) @definition.protocol

(function_declaration name: (simple_identifier) @name body: (_)? @body) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.function
((init_declaration body: (_)? @body) @definition.constructor (#set! name.fixed "init"))
((deinit_declaration body: (_)? @body) @definition.constructor (#set! name.fixed "deinit"))
((subscript_declaration (computed_property)? @body) @definition.function (#set! name.fixed "subscript"))

; `var count: Int { get {...} }`: a computed property is code; a stored one is not.
(property_declaration name: (pattern bound_identifier: (_) @name)
  computed_value: (computed_property) @body) @definition.function
; `let handler = { x in ... }`
(property_declaration name: (pattern bound_identifier: (_) @name) value: (lambda_literal)) @definition.function

; `items[i]` is a call_expression too, with `[` arguments: not a call.
(call_expression . (_) @callee (call_suffix [(value_arguments . "(") (lambda_literal)]))
(constructor_expression constructed_type: (_) @callee)

(import_declaration (identifier) @import.module) @import
