export * from './schema';
export { interpolate, interpolateString, type InterpolationResult, type PathSegment } from './interpolate';
export { GatewayConfigError, MAX_CONFIG_BYTES, loadGatewayConfig, parseGatewayConfig } from './load';
export { ConfigStore, type ConfigLog, type ReloadResult, type SignalTarget } from './store';
export { SIMULATOR_PRICES, builtInGatewayConfig } from './builtin';
export { channelsServing, groupMultiplier, modelPrice, upstreamModel } from './lookup';
