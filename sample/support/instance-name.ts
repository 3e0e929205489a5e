/** Injection token: the name of this app instance ("A", "B", ...), for the logs. */
export const INSTANCE_NAME = 'SAMPLE_INSTANCE_NAME';
