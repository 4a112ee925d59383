/** A labelled <select>; the first option (value '') reads "any" unless `empty` names it otherwise. */
export function Choice(props: { label: string; name: string; value: string; options: Array<[string, string]>; onChange: (v: string) => void; empty?: string }) {
  return (
    <label>
      {props.label}
      <select name={props.name} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
        <option value="">{props.empty ?? 'any'}</option>
        {props.options.map(([value, text]) => <option key={value} value={value}>{text}</option>)}
      </select>
    </label>
  );
}
