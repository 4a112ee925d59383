/** A labelled <select>; the first option is "any" (value ''). */
export function Choice(props: { label: string; name: string; value: string; options: Array<[string, string]>; onChange: (v: string) => void }) {
  return (
    <label>
      {props.label}
      <select name={props.name} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        <option value="">any</option>
        {props.options.map(([value, text]) => <option key={value} value={value}>{text}</option>)}
      </select>
    </label>
  );
}
