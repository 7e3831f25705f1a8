/**
 * Whether a name holds a control character (C0, DEL or C1), for the Schemas
 * that refuse one in a display name, a model name or a header name.
 *
 * @internal
 */
// oxlint-disable-next-line no-control-regex -- control characters are what it looks for
export const hasControl = (name: string): boolean => /[\u0000-\u001f\u007f-\u009f]/.test(name)
