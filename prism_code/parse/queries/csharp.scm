; C#: definitions, calls and imports (read by prism_code/parse/tagged.py).

(class_declaration name: (_) @name body: (_)? @body) @definition.class
(struct_declaration name: (_) @name body: (_)? @body) @definition.struct
(interface_declaration name: (_) @name body: (_)? @body) @definition.interface
(enum_declaration name: (_) @name body: (_)? @body) @definition.enum
(record_declaration name: (_) @name body: (_)? @body) @definition.class
(delegate_declaration name: (_) @name) @definition.type

(method_declaration name: (_) @name body: (_)? @body) @definition.method
(constructor_declaration name: (_) @name body: (_)? @body) @definition.constructor
((destructor_declaration body: (_)? @body) @definition.method (#set! name.fixed "Finalize"))
(local_function_statement name: (_) @name body: (_)? @body) @definition.function
(operator_declaration "operator" @name . operator: _ @name body: (_)? @body) @definition.method
(conversion_operator_declaration "operator" @name . type: (_) @name body: (_)? @body) @definition.method
((indexer_declaration) @definition.method (#set! name.fixed "this[]"))
; Properties and events with code in their accessors or an `=> expression`; auto-properties are data.
(property_declaration name: (_) @name value: (arrow_expression_clause) @body) @definition.method
(property_declaration name: (_) @name accessors: (accessor_list (accessor_declaration body: (_))) @body) @definition.method
(event_declaration name: (_) @name accessors: (accessor_list (accessor_declaration body: (_))) @body) @definition.method

(invocation_expression function: (_) @callee)
(object_creation_expression type: (_) @callee)

((using_directive) @import (#set! import.read "csharp_using"))
