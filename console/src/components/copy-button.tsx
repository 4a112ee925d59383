import { useState } from 'preact/hooks';

export function CopyButton(props: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.text);
      setDone(true);
    } catch {
      // Clipboard refused (no permission, insecure origin): select the text for a manual copy instead.
      const el = document.getElementById('new-key-value');
      if (el) window.getSelection()?.selectAllChildren(el);
    }
  };
  return <button type="button" onClick={copy}>{done ? 'Copied' : props.label ?? 'Copy'}</button>;
}
