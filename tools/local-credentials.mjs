// @ts-check
/** Region used with local servers (they accept any). */
export const LOCAL_REGION = 'us-east-1';

/**
 * Fresh dummy static credentials for local servers (requests must still be
 * signed). A new object each time: the SDK annotates the object it is given.
 * @returns {{ accessKeyId: string, secretAccessKey: string }}
 */
export function localCredentials() {
  return { accessKeyId: 'test', secretAccessKey: 'test' };
}
