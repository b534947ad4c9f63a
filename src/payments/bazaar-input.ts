/** The parts of a bazaar declaration (@x402/extensions) that one field of its `info.input` touches. */
interface Declaration {
  info: { input: object };
  schema: { properties: { input: { properties: object; required: readonly string[] } } };
}

/**
 * A bazaar declaration with one field more in `info.input`, declared in its schema too: the
 * library closes the input to fields it does not name (additionalProperties: false), and its
 * declareDiscoveryExtension takes no extra ones. `required` also requires the field.
 */
export function withInputField<D extends Declaration>(
  declaration: D,
  name: string,
  value: unknown,
  fieldSchema: object,
  required = false,
): D {
  const { info, schema } = declaration;
  const input = schema.properties.input;
  return {
    ...declaration,
    info: { ...info, input: { ...info.input, [name]: value } },
    schema: {
      ...schema,
      properties: {
        ...schema.properties,
        input: {
          ...input,
          properties: { ...input.properties, [name]: fieldSchema },
          ...(required ? { required: [...input.required, name] } : {}),
        },
      },
    },
  };
}
