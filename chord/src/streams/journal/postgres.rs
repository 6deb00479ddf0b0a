//! A journal in a PostgreSQL table, `chord_protocol_streams` in the store's schema: one row a
//! record, in the order of an identity column. One server at a time writes it: the journal
//! holds a session-level advisory lock of its own (a key from the schema) while open.

use postgres::Client;

use super::Medium;
use crate::store::{Error, Target};

pub(super) struct TableMedium {
    target: Target,
    /// Always there but while dropped (see the `Drop` impl) or reconnecting.
    client: Option<Client>,
    table: String,
}

impl Drop for TableMedium {
    /// The client ends its session (and the journal's lock) with a runtime of its own, which
    /// cannot start on a thread driving another: a server drops its router inside one.
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = std::thread::spawn(move || drop(client)).join();
        }
    }
}

/// A connection holding the journal's lock.
fn connect(target: &Target) -> Result<Client, Error> {
    let mut client = target.connect()?;
    let key = i64::from(crc32c::crc32c(
        format!("chord-protocol-streams\0{}", target.schema).as_bytes(),
    ));
    let held: bool = client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
        .map_err(target.error("lock the protocol streams' journal"))?
        .get(0);
    if !held {
        return Err(Error::Locked {
            path: format!("{} (table chord_protocol_streams)", target.name).into(),
        });
    }
    Ok(client)
}

impl TableMedium {
    pub(super) fn open(url: &str) -> Result<TableMedium, Error> {
        let target = Target::parse(url)?;
        let mut client = connect(&target)?;
        let schema = target.quoted_schema();
        let table = format!("{schema}.chord_protocol_streams");
        client
            .batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {schema};
                 CREATE TABLE IF NOT EXISTS {table} (
                     seq    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                     record text NOT NULL
                 );"
            ))
            .map_err(target.error("create the protocol streams' journal"))?;
        Ok(TableMedium {
            target,
            client: Some(client),
            table,
        })
    }

    /// The connection; one the server ended (a restart, a cut) is opened again, with the
    /// lock, before the next record is written (the record that met the cut was answered
    /// `503`).
    fn client(&mut self) -> Result<&mut Client, Error> {
        let client = match self.client.take() {
            Some(client) if !client.is_closed() => client,
            _ => connect(&self.target)?,
        };
        Ok(self.client.insert(client))
    }
}

impl Medium for TableMedium {
    fn load(&mut self) -> Result<Vec<Vec<u8>>, Error> {
        let select = format!("SELECT record FROM {} ORDER BY seq", self.table);
        let error = self.target.clone();
        let rows = self
            .client()?
            .query(&select, &[])
            .map_err(error.error("read the protocol streams' journal"))?;
        Ok(rows
            .iter()
            .map(|row| row.get::<_, String>(0).into_bytes())
            .collect())
    }

    fn write(&mut self, record: &[u8]) -> Result<(), Error> {
        // Records are JSON, made by this process: UTF-8.
        let text = String::from_utf8_lossy(record);
        let insert = format!("INSERT INTO {} (record) VALUES ($1)", self.table);
        let error = self.target.clone();
        self.client()?
            .execute(&insert, &[&text.as_ref()])
            .map_err(error.error("append to the protocol streams' journal"))?;
        Ok(())
    }

    fn rewrite(&mut self, records: &[Vec<u8>]) -> Result<(), Error> {
        let target = self.target.clone();
        let error = target.error("rewrite the protocol streams' journal");
        let table = self.table.clone();
        let mut tx = self.client()?.transaction().map_err(&error)?;
        tx.execute(&format!("DELETE FROM {table}"), &[])
            .map_err(&error)?;
        let insert = tx
            .prepare(&format!("INSERT INTO {table} (record) VALUES ($1)"))
            .map_err(&error)?;
        for record in records {
            let text = String::from_utf8_lossy(record);
            tx.execute(&insert, &[&text.as_ref()]).map_err(&error)?;
        }
        tx.commit().map_err(&error)
    }

    fn name(&self) -> String {
        format!("{} (table chord_protocol_streams)", self.target.name)
    }
}
