/** The custom-fields example as a site would install it: what bench/cache.ts measures against no callback (C38). */
export { default } from '../../src/hooks/examples/custom-fields'
