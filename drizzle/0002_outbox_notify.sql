-- Wake the bus publishers of every instance when events are recorded (delivered on commit).
CREATE FUNCTION tessera_notify_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tessera_outbox', '');
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER tessera_outbox_inserted AFTER INSERT ON "tessera_event_outbox"
  FOR EACH STATEMENT EXECUTE FUNCTION tessera_notify_outbox();
