// Types the console's scripts name in their JSDoc. The scripts stay plain JavaScript, served as they are (this file
// is not served: the console's route serves `*.js` and `*.css` only); api/console/tsconfig.json checks them.

/** An input, change or submit event, with the element it was heard on (a form field by default). */
type FieldEvent<E extends EventTarget = HTMLInputElement> = Event & { currentTarget: E };
