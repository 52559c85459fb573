/** Loading data in a view: a tiny hook with the value or the error, and how an error is shown. */
import { useEffect, useState } from 'preact/hooks';
import { AuthError } from './api';

export interface Loaded<T> {
  value?: T;
  error?: Error;
}

/** Runs `load` when `deps` change; a late answer for old deps is dropped. Auth errors go to `onAuth`. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<Loaded<T>>({});
  useEffect(() => {
    let current = true;
    setState({});
    load().then(
      (value) => current && setState({ value }),
      (error: unknown) => {
        if (!current) return;
        if (error instanceof AuthError)
          window.dispatchEvent(new CustomEvent('tagger:auth', { detail: error }));
        setState({ error: error instanceof Error ? error : new Error(String(error)) });
      },
    );
    return () => {
      current = false;
    };
  }, deps);
  return state;
}

export function Failure({ error }: { error: Error }) {
  return (
    <p class="error" role="alert">
      {error.message}
    </p>
  );
}
