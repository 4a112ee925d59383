// Every workflow the worker serves. Deterministic code only: no Node built-ins, activities by type.
export { pingWorkflow } from './ping';
