import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/** A modal on the native <dialog>: focus is trapped, Esc closes it. */
export function Dialog(props: { title: string; open: boolean; onClose: () => void; children: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (props.open && !d.open) d.showModal();
    if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog ref={ref} aria-label={props.title} onClose={props.onClose}>
      <h2>{props.title}</h2>
      {props.open ? props.children : null}
    </dialog>
  );
}
